"""Per-provider defaults for the settings a user leaves unset, and the checks made before any call.

Nothing here imports litellm: `--help`, the stub and a wrong model string stay fast.

| kind of model                                   | concurrency | batch | timeout            | max_tokens | prompts |
|-------------------------------------------------|------------:|------:|--------------------|-----------:|---------|
| local server (api_base on this machine or a     |           1 |     1 | 180 s + 60 s/1k ch |       1024 | `local` |
|   private network, `ollama*`, `lm_studio`, ...) |             |       |                    |            |         |
| hosted provider                                 |           8 |     8 | 60 s + 5 s/1k ch   |       4096 | default |
| stub (the tool's own heuristics)                |           4 |     8 | -                  |          - | default |
| mock (replays recordings)                       |           1 |     8 | -                  |          - | default |

Why: a llama.cpp server answers one request at a time (four at once only queue and time out); a
small local model decides once per batch and copies the verdict to every item, so it is asked one
item per call; on 2 CPU cores it reads ~20 prompt tokens/s, so its timeout grows with the prompt
(60 s per 1,000 characters, ~250 tokens) and `max_tokens` keeps a run-on reply from generating for
a quarter of an hour; its prompts (`prompts/<stage>.local.md`) are short checklists with worked
examples, which a 1.5B model follows where it does not follow a description. The mock's batch is the one its recordings were made with (evals/recordings/
README.md), so the payloads it is asked for are the ones recorded. Temperature is 0 for every
model: the cache keeps one reply per input, and it should be the model's most likely one.

Hosted concurrency and batch, measured (`python scripts/llm_bench.py --table 4,8,16x2,4,8`: a
15k-memory bank, a server answering in 200 ms, seconds from the first request to the end of the
run, on 2 shared, heavily loaded cores; one fixed ~2-4 s of it is the conflicts stage finding its
candidates, which waits for the reorder stage's merges):

| batch x concurrency |    2   |    4        |    8        |
|---------------------|--------|-------------|-------------|
|  4 (214 requests)   | 36.3 s | 20.9 s      | 20.6 s      |
|  8 (108 requests)   | 33.5 s | 18.2, 17.4 s| 12.4, 12.5 s|
| 16 (55 requests)    | 13.1 s |  8.1 s      | 10.6 s      |

The client spends ~15-30 ms of CPU a request (litellm, the openai SDK, instructor), so on busy
cores a batch of 4 is CPU-bound at 4 in flight already; at a batch of 8, 8 in flight cut the time
by a third at 200 ms, and a hosted model answers in seconds, not 200 ms, where more in flight only
helps more (a rate limit's 429s are waited out with Retry-After). The batch stays 8: it changes
what the model is asked (a model that decides once per batch copies its verdict to more items in a
batch of 16) and the prompts and evals were tuned at 8; throughput alone does not decide it.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit

LOCAL_PROVIDERS = frozenset({"ollama", "ollama_chat", "lm_studio", "llamafile", "hosted_vllm", "vllm", "xinference"})
# Providers whose SDKs find credentials by themselves (profiles, metadata servers, gcloud ADC):
# a variable litellm lists as missing may not be needed at all.
AMBIENT_CREDENTIALS = frozenset({"bedrock", "bedrock_converse", "sagemaker", "sagemaker_chat", "vertex_ai", "vertex_ai_beta", "azure_ai"})


@dataclass(frozen=True)
class Defaults:
    concurrency: int
    batch_size: int
    timeout_s: float
    timeout_per_1k_chars_s: float
    max_tokens: int | None
    prompt_set: str  # "" = prompts/<stage>.md; "local" = prompts/<stage>.local.md where one exists


HOSTED = Defaults(concurrency=8, batch_size=8, timeout_s=60.0, timeout_per_1k_chars_s=5.0, max_tokens=4096, prompt_set="")
LOCAL = Defaults(concurrency=1, batch_size=1, timeout_s=180.0, timeout_per_1k_chars_s=60.0, max_tokens=1024, prompt_set="local")
STUB = Defaults(concurrency=4, batch_size=8, timeout_s=60.0, timeout_per_1k_chars_s=0.0, max_tokens=None, prompt_set="")
# The batch size and prompts the committed recordings were made with (evals/recordings/README.md).
MOCK = Defaults(concurrency=1, batch_size=8, timeout_s=60.0, timeout_per_1k_chars_s=0.0, max_tokens=None, prompt_set="")


def provider_of(model: str) -> str:
    return model.split("/", 1)[0].lower() if "/" in model else ""


def is_local(model: str, api_base: str | None) -> bool:
    """A server on this machine or a private network (or a provider that only runs locally)."""
    if provider_of(model) in LOCAL_PROVIDERS:
        return True
    if not api_base:
        return False
    host = (urlsplit(api_base).hostname or "").lower()
    if host in ("localhost", "") or host.endswith((".local", ".localhost", ".internal")):
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    return ip.is_loopback or ip.is_private or ip.is_unspecified or ip.is_link_local


def defaults_for(model: str, api_base: str | None) -> Defaults:
    if model in ("stub", "none", ""):
        return STUB
    if model == "mock":
        return MOCK
    return LOCAL if is_local(model, api_base) else HOSTED


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
