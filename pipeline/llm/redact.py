"""Keep secrets out of error messages, cache keys and recordings."""

from __future__ import annotations

import os
import re
from urllib.parse import urlsplit, urlunsplit

_PATTERNS = [
    # key-shaped tokens: OpenAI/Anthropic style, bearer tokens
    (re.compile(r"\b(sk|pk|rk)-[A-Za-z0-9_\-]{6,}"), "[REDACTED]"),
    (re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=\-]{6,}"), r"\1 [REDACTED]"),
    # credentials in URLs and query strings
    (re.compile(r"(?i)(://)[^/\s:@]+:[^/\s@]+@"), r"\1[REDACTED]@"),
    (re.compile(r"(?i)([?&](?:api[_-]?key|key|token|access_token|secret|sig|signature)=)[^&\s]+"), r"\1[REDACTED]"),
    (re.compile(r"(?i)((?:x-)?api[_-]?key['\"]?\s*[:=]\s*['\"]?)[^'\"\s,}]+"), r"\1[REDACTED]"),
]
_SECRET_ENV = re.compile(r"(?i)(KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL)")


def env_secrets() -> list[str]:
    """Values of environment variables that look like credentials (provider keys live there)."""
    return [v for k, v in os.environ.items() if _SECRET_ENV.search(k) and len(v) >= 8]


def redact(text: str, secrets: list[str] | tuple[str, ...] = ()) -> str:
    """`text` with known secrets and key-shaped strings replaced by [REDACTED]."""
    for secret in sorted({s for s in secrets if s and len(s) >= 4}, key=len, reverse=True):
        text = text.replace(secret, "[REDACTED]")
    for pattern, repl in _PATTERNS:
        text = pattern.sub(repl, text)
    return text


def clean_api_base(api_base: str | None) -> str | None:
    """The server's address without user:password or query string (which may carry a key)."""
    if not api_base:
        return None
    parts = urlsplit(api_base.strip())
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme.lower(), host.lower(), parts.path.rstrip("/"), "", ""))
