"""A resumed session's compaction parts, kept as the log line they were read from and decoded
only when asked for (the inspector, a whole state written again).

A thousand-turn session logs some 800 compactions whose parts (the text each one put in) add up to
about 14 MB. Packing them again on resume (JSON, then zlib: `agent_core.loop.packed_parts`) took
0.3 s, more than the rest of resuming; the line's bytes are already what that packing encodes.
Decoding them at all was most of what was left (70 ms): `decode_compaction_line` reads such a line
without its parts.
"""
from __future__ import annotations

import json
from typing import Any

from agent_core.lazy_parts import LazyParts


PARTS_KEY = b',"parts":{'
USAGE_KEY = b',"usage":'


def decode_compaction_line(line: bytes) -> dict[str, Any] | None:
    """The record of a compaction event line as the writer lays it out (`{"t":"event",...,"event":
    {"type":"compaction",...,"parts":{...},"usage":...}}`), decoded without its parts, which stay
    the line's bytes (`LoggedParts`); None for any other line, which is then decoded whole.

    A quote inside a JSON string is always escaped, so `,"parts":{` and `,"usage":` are keys. The
    part before the first `"parts"` must close as the event and the record with `}}` (a `"parts"`
    key nested deeper leaves an object open and fails to decode), and what follows the last
    `"usage"` must be one JSON value and then `}}`: otherwise the line is not in that shape."""
    if not line.startswith(b'{"t":"event"') or b'"type":"compaction"' not in line[:256]:
        return None
    i, j = line.find(PARTS_KEY), line.rfind(USAGE_KEY)
    if i < 0 or j < i:
        return None
    tail = line[j + len(USAGE_KEY):].rstrip()
    if not tail.endswith(b"}}"):
        return None
    try:
        rec = json.loads(line[:i] + b"}}")
        usage = json.loads(tail[:-2])
    except (ValueError, RecursionError):
        return None
    event = rec.get("event") if isinstance(rec, dict) else None
    if (rec.get("t") != "event" or not isinstance(event, dict) or event.get("type") != "compaction"
            or "parts" in event or "usage" in event):
        return None
    event["parts"] = LoggedParts(line)
    event["usage"] = usage
    return rec


class LoggedParts(LazyParts):
    """Read-only parts of the compaction event on one log line (its bytes, as read)."""

    __slots__ = ("_line",)

    def __init__(self, line: bytes) -> None:
        self._line = line

    def unpacked(self) -> dict[str, Any]:
        rec = json.loads(self._line)
        event = rec.get("event") if isinstance(rec, dict) else None
        parts = event.get("parts") if isinstance(event, dict) else None
        return parts if isinstance(parts, dict) else {}

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (self.unpacked(),))
