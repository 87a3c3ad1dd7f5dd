"""The one scrubber every writer and every tool result goes through.

A secret (the API key, an auth token, a password in a base URL) is registered once, at start-up,
by whoever knows it; from then on `scrub(text)` replaces every occurrence of it — raw, or as it
appears inside a JSON string — with `[REDACTED]`. The set is process-wide on purpose: a secret is
a fact about the process, and a writer that forgot to be handed the list would leak. Keeping it
here (pure Python, no I/O) lets the engine's own writers (transcripts, persisted tool results)
use it without importing the loop.
"""
from __future__ import annotations

import json
import re
import threading
from typing import Iterable
from urllib.parse import urlsplit, urlunsplit

REDACTED = "[REDACTED]"
MIN_SECRET_LEN = 8   # shorter values occur by chance too often to be replaced everywhere

_lock = threading.Lock()
_secrets: tuple[str, ...] = ()        # every registered form, longest first
_pattern: re.Pattern[str] | None = None


def _forms(value: str) -> set[str]:
    """The value as written raw and as JSON would escape it (ASCII-only and not)."""
    return {value, json.dumps(value, ensure_ascii=False)[1:-1], json.dumps(value)[1:-1]}


def register_secret(*values: str | None) -> None:
    """Scrub these values from everything written or shown from now on (short or empty ones are
    ignored: they would match by chance)."""
    global _secrets, _pattern
    new = {f for v in values if isinstance(v, str) and len(v.strip()) >= MIN_SECRET_LEN
           for f in _forms(v.strip())}
    if not new - set(_secrets):
        return
    with _lock:
        _secrets = tuple(sorted(set(_secrets) | new, key=len, reverse=True))
        _pattern = re.compile("|".join(re.escape(s) for s in _secrets))


def registered() -> tuple[str, ...]:
    return _secrets


def forget_secrets() -> None:
    """For tests: start again with no secrets."""
    global _secrets, _pattern
    with _lock:
        _secrets, _pattern = (), None


def scrub(text: str, extra: Iterable[str | None] = ()) -> str:
    """`text` with every registered secret (and any in `extra`) replaced by `[REDACTED]`."""
    pattern = _pattern
    extra_forms = sorted({f for v in extra if isinstance(v, str) and len(v.strip()) >= MIN_SECRET_LEN
                          for f in _forms(v.strip())}, key=len, reverse=True)
    if extra_forms:
        text = re.sub("|".join(re.escape(s) for s in extra_forms), REDACTED, text)
    if pattern is None or not text:
        return text
    return pattern.sub(REDACTED, text)


def scrub_counted(text: str) -> tuple[str, int]:
    """`scrub(text)` and how many secrets it replaced, in one pass (the session log counts them)."""
    pattern = _pattern
    if pattern is None or not text:
        return text, 0
    return pattern.subn(REDACTED, text)


def redact_url(url: str | None) -> str | None:
    """`https://user:pass@host/x` → `https://user:[REDACTED]@host/x`; other URLs unchanged. The
    password is also registered, so it is scrubbed wherever else it turns up."""
    if not url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return scrub(url)
    if parts.password is None:
        return scrub(url)
    register_secret(parts.password)
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    user = parts.username or ""
    return urlunsplit((parts.scheme, f"{user}:{REDACTED}@{host}", parts.path, parts.query, parts.fragment))
