"""A resumed session's compaction parts, kept as the log line they were read from and decoded
only when asked for (the inspector, a whole state written again).

A thousand-turn session logs some 800 compactions whose parts (the text each one put in) add up to
about 14 MB. Packing them again on resume (JSON, then zlib: `agent_core.loop.packed_parts`) took
0.3 s, more than the rest of resuming; the line's bytes are already what that packing encodes.
"""
from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any


class LoggedParts(Mapping[str, Any]):
    """Read-only parts of the compaction event on one log line (its bytes, as read)."""

    __slots__ = ("_line",)

    def __init__(self, line: bytes) -> None:
        self._line = line

    def unpacked(self) -> dict[str, Any]:
        rec = json.loads(self._line)
        event = rec.get("event") if isinstance(rec, dict) else None
        parts = event.get("parts") if isinstance(event, dict) else None
        return parts if isinstance(parts, dict) else {}

    def __getitem__(self, key: str) -> Any:
        return self.unpacked()[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.unpacked().get(key, default)

    def __iter__(self) -> Iterator[str]:
        return iter(self.unpacked())

    def __len__(self) -> int:
        return len(self.unpacked())

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (self.unpacked(),))
