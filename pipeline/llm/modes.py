"""instructor modes and the default per provider.

| model / server                                         | default       | why |
|--------------------------------------------------------|---------------|-----|
| any model with `api_base` (llama.cpp, vLLM, LM Studio, | `tools`       | llama.cpp's server rejects `json_schema` response formats and does not enforce plain `json` (a small model answers `{}`); its forced tool call is grammar-constrained and works (LIBRARY-NOTES) |
|   a proxy: `openai/<name>` + `--api-base`)             |               | |
| `ollama_chat/<model>`, `ollama/<model>`                | `tools`       | local server, same reasoning; pick `json` for a model without tool support |
| `text-completion-*` providers (no chat, no tools)      | `md_json`     | only text comes back: a fenced JSON block is parsed out of it |
| hosted chat providers (`openai/`, `anthropic/`,        | `tools`       | instructor's own default; litellm maps tool calls for every chat provider |
|   `gemini/`, `vertex_ai/`, `bedrock/`, `mistral/`, ...) |               | |

Override with `--llm-mode tools|json|json_schema|md_json` or `[llm] mode = ...` in the config file.
`json_schema` is the strictest where a provider supports it (OpenAI's hosted models); `json` asks for
a JSON object with the schema in the system message.
"""

from __future__ import annotations

MODES: tuple[str, ...] = ("tools", "json", "json_schema", "md_json")


def default_mode(model: str, api_base: str | None = None) -> str:
    provider = model.split("/", 1)[0].lower() if "/" in model else ""
    if provider.startswith("text-completion"):
        return "md_json"
    return "tools"


def resolve_mode(configured: str | None, model: str, api_base: str | None = None) -> str:
    """The configured mode (validated), else the provider default."""
    if configured is None or configured == "":
        return default_mode(model, api_base)
    mode = configured.strip().lower().replace("-", "_")
    if mode not in MODES:
        raise ValueError(f"unknown LLM mode {configured!r}: choose one of {', '.join(MODES)}")
    return mode
