"""The checks made before any call: the model string, its credentials, the server's URL.

Nothing here imports litellm: `--help`, the stub and a wrong model string stay fast. The defaults
for unset settings, per provider, are in `pipeline/provider_defaults.py`.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from ..provider_defaults import LOCAL_PROVIDERS, Defaults, defaults_for, is_local, provider_of

__all__ = ["Defaults", "LOCAL_PROVIDERS", "defaults_for", "is_local", "provider_of"]  # read from here too

# Providers whose SDKs find credentials by themselves (profiles, metadata servers, gcloud ADC):
# a variable litellm lists as missing may not be needed at all.
AMBIENT_CREDENTIALS = frozenset({"bedrock", "bedrock_converse", "sagemaker", "sagemaker_chat", "vertex_ai", "vertex_ai_beta", "azure_ai"})


def check_api_base(api_base: str | None) -> str | None:
    """The URL as given, or ValueError (one line) when it cannot be a server address."""
    if api_base is None or api_base == "":
        return None
    text = api_base.strip()
    try:
        parts = urlsplit(text)
        port = parts.port  # raises for a port that is not a number in 0-65535
    except ValueError:
        raise ValueError(f"--api-base {api_base!r} is not a valid URL: the port must be a number 1-65535") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"--api-base {api_base!r} is not a valid URL: write it as http://HOST:PORT/v1 (http or https, with a host)")
    if port == 0 or any(ch.isspace() for ch in text):
        raise ValueError(f"--api-base {api_base!r} is not a valid URL: write it as http://HOST:PORT/v1")
    return text


def precheck_model(model: str, api_base: str | None) -> None:
    """ValueError when litellm certainly cannot tell the model's provider; decided from litellm's
    own provider list and model map, read as files (importing litellm takes seconds). When unsure
    (litellm's files not where expected, an unknown name behind an api_base), it returns and the
    full check with litellm decides."""
    known = _litellm_names()
    if known is None:
        return
    providers, models = known
    if model in models or provider_of(model) in providers:
        return
    if api_base:
        return
    raise ValueError(unknown_model_message(model))


def certainly_known(model: str) -> bool:
    """True when litellm's own files name the model or its provider (`provider/name`): then litellm
    will tell its provider too, and the check that imports litellm can wait for the first real call
    (a fully cached run never imports it). False when unsure: the caller asks litellm now."""
    known = _litellm_names()
    if known is None:
        return False
    providers, models = known
    provider, _, name = model.partition("/")
    return model in models or (bool(name.strip()) and provider.lower() in providers)


# The variable each common provider reads its key from (litellm's `validate_environment` looks for
# exactly these): when it is set, the credentials check that imports litellm has nothing to add.
KEY_VARIABLES: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "gemini": ("GEMINI_API_KEY",),
    "mistral": ("MISTRAL_API_KEY",),
    "groq": ("GROQ_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
}


def key_in_environment(model: str, environ: dict[str, str] | None = None) -> bool:
    """The provider's usual key variable is set (non-empty): no need to ask litellm what is missing."""
    import os

    env = os.environ if environ is None else environ
    return any(env.get(name) for name in KEY_VARIABLES.get(provider_of(model), ()))


def unknown_model_message(model: str) -> str:
    return (
        f"unknown model {model!r}: litellm cannot tell its provider; "
        "write it as provider/name, e.g. openai/gpt-4.1-mini, ollama_chat/qwen2.5, or openai/<name> with --api-base"
    )


def _litellm_names() -> tuple[frozenset[str], frozenset[str]] | None:
    global _NAMES
    if _NAMES is None:
        _NAMES = _read_litellm_names() or False
    return _NAMES if isinstance(_NAMES, tuple) else None


_NAMES: tuple[frozenset[str], frozenset[str]] | bool | None = None


def _read_litellm_names() -> tuple[frozenset[str], frozenset[str]] | None:
    import ast
    import importlib.util
    import json
    from pathlib import Path

    try:
        spec = importlib.util.find_spec("litellm")
        root = Path(next(iter(spec.submodule_search_locations or ()))) if spec else None
        if root is None:
            return None
        tree = ast.parse((root / "types" / "utils.py").read_text(encoding="utf-8"))
        providers = {
            st.value.value
            for node in tree.body
            if isinstance(node, ast.ClassDef) and node.name == "LlmProviders"
            for st in node.body
            if isinstance(st, ast.Assign) and isinstance(st.value, ast.Constant) and isinstance(st.value.value, str)
        }
        models = json.loads((root / "model_prices_and_context_window_backup.json").read_text(encoding="utf-8"))
    except (OSError, StopIteration, SyntaxError, ValueError, ImportError):
        return None
    if not providers or not isinstance(models, dict):
        return None
    return frozenset(providers), frozenset(models)
