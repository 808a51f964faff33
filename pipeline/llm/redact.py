"""Keep secrets out of error messages, cache keys, recordings and model replies.

Two levels: `redact` (error messages) also replaces key-shaped strings; `redact_reply` (a model's
reply, before it is cached, recorded or turned into actions) replaces only the exact values the
client knows to be secret, since a reply quotes memory text that may legitimately look key-shaped.
"""

from __future__ import annotations

import os
import re
from typing import Any, Iterable, TypeVar
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ValidationError

REDACTED = "[REDACTED]"
# Shorter values are too likely to be ordinary words or numbers found in memory text.
SECRET_MIN_CHARS = 8

_PATTERNS = [
    # key-shaped tokens: OpenAI/Anthropic style, bearer tokens
    (re.compile(r"\b(sk|pk|rk)-[A-Za-z0-9_\-]{6,}"), REDACTED),
    (re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=\-]{6,}"), rf"\1 {REDACTED}"),
    # credentials in URLs and query strings
    (re.compile(r"(?i)(://)[^/\s:@]+:[^/\s@]+@"), rf"\1{REDACTED}@"),
    (re.compile(r"(?i)([?&](?:api[_-]?key|key|token|access_token|secret|sig|signature)=)[^&\s]+"), rf"\1{REDACTED}"),
    (re.compile(r"(?i)((?:x-)?api[_-]?key['\"]?\s*[:=]\s*['\"]?)[^'\"\s,}]+"), rf"\1{REDACTED}"),
]
# The variables litellm and the providers' SDKs read credentials from: *_API_KEY, *_TOKEN,
# AWS_SECRET_ACCESS_KEY, *_PASSWORD, VERTEXAI_CREDENTIALS, ...
_SECRET_ENV = re.compile(r"(?i)(KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL)")

B = TypeVar("B", bound=BaseModel)


def _credential_like(value: str) -> bool:
    """Worth redacting: long enough, one word, not a plain dictionary word or an existing path
    (PIP_KEYRING_PROVIDER=disabled or SSH_KEY_PATH=/home/me/.ssh/id are not credentials)."""
    if len(value) < SECRET_MIN_CHARS or any(ch.isspace() for ch in value):
        return False
    if value.isalpha() and (value.islower() or value.isupper()):
        return False
    return not (os.path.isabs(value) and os.path.exists(value))


def env_secrets() -> list[str]:
    """Values of environment variables that look like credentials (provider keys live there)."""
    return [v for k, v in os.environ.items() if _SECRET_ENV.search(k) and _credential_like(v)]


def known_secrets(api_key: str | None = None) -> tuple[str, ...]:
    """Every secret a client knows: the api key it was given and the credentials in the environment."""
    found = env_secrets()
    if api_key:
        found.append(api_key)  # whatever its shape: it was given as a key
    return tuple(dict.fromkeys(found))


def _replace_known(text: str, secrets: Iterable[str], min_chars: int) -> str:
    for secret in sorted({s for s in secrets if s and len(s) >= min_chars}, key=len, reverse=True):
        # Case-insensitive: a model that lower-cases an echoed key (or a slug made from it) leaks it too.
        text = re.sub(re.escape(secret), REDACTED, text, flags=re.IGNORECASE)
    return text


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with known secrets and key-shaped strings replaced by [REDACTED]."""
    text = _replace_known(text, secrets, 4)
    for pattern, repl in _PATTERNS:
        text = pattern.sub(repl, text)
    return text


def _scrub(value: Any, secrets: tuple[str, ...]) -> Any:
    if isinstance(value, str):
        return _replace_known(value, secrets, SECRET_MIN_CHARS)
    if isinstance(value, list):
        return [_scrub(v, secrets) for v in value]
    if isinstance(value, dict):
        return {_scrub(k, secrets): _scrub(v, secrets) for k, v in value.items()}
    return value


def redact_reply(reply: B, secrets: Iterable[str]) -> B:
    """`reply` with every known secret replaced in every string it holds (the same object when it
    holds none). A reply that no longer validates once redacted raises ValueError."""
    known = tuple(s for s in secrets if s and len(s) >= SECRET_MIN_CHARS)
    if not known:
        return reply
    data = reply.model_dump(mode="json")
    clean = _scrub(data, known)
    if clean == data:
        return reply
    try:
        return type(reply).model_validate(clean)
    except ValidationError:
        raise ValueError("the reply holds a secret where the schema allows no other text") from None


def clean_api_base(api_base: str | None) -> str | None:
    """The server's address without user:password or query string (which may carry a key)."""
    if not api_base:
        return None
    parts = urlsplit(api_base.strip())
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme.lower(), host.lower(), parts.path.rstrip("/"), "", ""))
