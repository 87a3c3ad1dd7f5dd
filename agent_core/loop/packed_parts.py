"""A compaction's entry-level changes (`Compaction.parts`) kept compressed once it is no longer
recent. Parts hold the text a compaction put in (a summary, session notes: up to 20,000
characters each), and a thousand-turn session makes hundreds of compactions; kept as dicts they
were most of what the agent's memory grew by. The latest few stay plain; older ones are a zlib'd
JSON blob that unpacks on each read, which only the inspector and the session log do."""
from __future__ import annotations

import json
import zlib
from typing import Any, Mapping

from agent_core.lazy_parts import LazyParts

PARTS_LIVE = 8      # the newest compactions whose parts stay plain dicts


class PackedParts(LazyParts):
    """Read-only parts from a compressed blob: a Mapping, so readers need not know."""

    __slots__ = ("_blob",)

    def __init__(self, parts: Mapping[str, Any]) -> None:
        self._blob = zlib.compress(json.dumps(dict(parts), separators=(",", ":")).encode(), 6)

    def unpacked(self) -> dict[str, Any]:
        value: dict[str, Any] = json.loads(zlib.decompress(self._blob))
        return value

    def __reduce__(self) -> tuple[Any, ...]:
        return (PackedParts, (self.unpacked(),))


def pack_older(compactions: list[Any], live: int = PARTS_LIVE) -> None:
    """Compress the parts of every compaction but the newest `live` (those already packed stay)."""
    for c in compactions[: max(0, len(compactions) - live)]:
        if isinstance(c.parts, dict):
            c.parts = PackedParts(c.parts)
