"""The LLM client: instructor over litellm, a disk cache, one retry layer, fail-soft; stub and mock models.

Public API (importing this never imports litellm):

    make_client(settings.llm, ...) -> LLMClient | None
    LLMClient.structured(stage, payload, schema) -> schema instance        (raises StageCallError)
    LLMClient.structured_many(stage, payloads, schema) -> list[instance | StageCallError]
    LLMClient.stats -> pipeline.model.Stats
    StageCallError(stage, reason), BudgetExceeded, UnknownHandle
    Handles(keys, stage=...)            small integer handles for candidates
    register_stub(stage)                the `stub` model's answer for a stage
"""

from .client import LLMClient, make_client
from .errors import BudgetExceeded, StageCallError, UnknownHandle
from .handles import Handles
from .modes import MODES, default_mode, resolve_mode
from .prompts import Prompt, load_prompt
from .recordings import RECORDINGS_ENV, Recordings, recording_key, recordings_dir
from .retry import RetryPolicy
from .stub import STUBS, register_stub

__all__ = [
    "BudgetExceeded",
    "Handles",
    "LLMClient",
    "MODES",
    "Prompt",
    "RECORDINGS_ENV",
    "RetryPolicy",
    "Recordings",
    "STUBS",
    "StageCallError",
    "UnknownHandle",
    "default_mode",
    "load_prompt",
    "make_client",
    "recording_key",
    "recordings_dir",
    "register_stub",
    "resolve_mode",
]
