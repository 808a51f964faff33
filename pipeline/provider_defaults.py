"""Per-provider defaults for the `[llm]` settings a user leaves unset.

At the bottom of the package (it imports nothing of it): `config` fills unset values from here when
it validates, and the client (`pipeline/llm/`) reads the same table.

| kind of model                                   | concurrency | batch | timeout            | max_tokens | prompts |
|-------------------------------------------------|------------:|------:|--------------------|-----------:|---------|
| local server (api_base on this machine or a     |           1 |     1 | 180 s + 60 s/1k ch |       1024 | `local` |
|   private network, `ollama*`, `lm_studio`, ...) |             |       |                    |            |         |
| hosted provider                                 |           8 |     8 | 60 s + 5 s/1k ch   |       4096 | default |
| stub (the tool's own heuristics)                |           4 |     8 | -                  |          - | default |
| mock (replays recordings)                       |           1 |     1 | -                  |          - | `local` |

Why: a llama.cpp server answers one request at a time (four at once only queue and time out); a
small local model decides once per batch and copies the verdict to every item, so it is asked one
item per call; on 2 CPU cores it reads ~20 prompt tokens/s, so its timeout grows with the prompt
(60 s per 1,000 characters, ~250 tokens) and `max_tokens` keeps a run-on reply from generating for
a quarter of an hour; its prompts (`prompts/<stage>.local.md`) are short checklists with worked
examples, which a 1.5B model follows where it does not follow a description. The mock asks the way its recordings were made (evals/recordings/README.md: a
local Qwen2.5-Coder 1.5B through the local defaults), so the payloads it is asked for are the ones
recorded. Temperature is 0 for every
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
MOCK = Defaults(concurrency=1, batch_size=1, timeout_s=60.0, timeout_per_1k_chars_s=0.0, max_tokens=None, prompt_set="local")


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
