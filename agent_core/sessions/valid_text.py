"""Text that can always be encoded as UTF-8.

Python strings can hold lone surrogates: stdin decoded with `surrogateescape`, a file name that is
not UTF-8, a JSON `\\udcff` escape from an earlier bug or a hostile server. One of them in the
history makes every request (and every later resume) fail to encode, so text is repaired, with
U+FFFD, before it enters the history and when an old log is loaded.
"""
from __future__ import annotations

import re
from typing import Any

from compaction.entry import Entry

REPLACEMENT = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_text(text: str) -> str:
    """`text` with every surrogate code point replaced by U+FFFD (the same object when clean)."""
    return _SURROGATE.sub(REPLACEMENT, text) if _SURROGATE.search(text) else text


def decode_input(data: bytes | str) -> str:
    """Input bytes as text: invalid UTF-8 becomes U+FFFD instead of an error."""
    if isinstance(data, bytes):
        return data.decode("utf-8", errors="replace")
    return valid_text(data)


def valid_json(obj: Any) -> Any:
    """A JSON-like value with every string (keys too) made valid; the same object when clean."""
    if isinstance(obj, str):
        return valid_text(obj)
    if isinstance(obj, list):
        new = [valid_json(v) for v in obj]
        return obj if all(a is b for a, b in zip(new, obj)) else new
    if isinstance(obj, dict):
        items = [(valid_json(k), valid_json(v)) for k, v in obj.items()]
        same = all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(items, obj.items()))
        return obj if same else dict(items)
    return obj


def valid_entry(entry: Entry) -> Entry:
    """The entry with valid text in its content (same uuid); the same entry when clean."""
    content = valid_json(entry.content)
    return entry if content is entry.content else entry.with_content(content)
