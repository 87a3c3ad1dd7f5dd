"""A compaction's parts held in some packed form and unpacked on each read: a read-only Mapping, so
readers (the inspector, the session log) need not know which form (`agent_core.loop.packed_parts`
keeps them zlib'd, `agent_core.sessions.logged_parts` as the log line they came on)."""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any


class LazyParts(Mapping[str, Any]):
    """Subclasses say how to unpack; every read unpacks (reads are rare: the inspector)."""

    __slots__ = ()

    def unpacked(self) -> dict[str, Any]:
        raise NotImplementedError

    def __getitem__(self, key: str) -> Any:
        return self.unpacked()[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.unpacked().get(key, default)

    def __iter__(self) -> Iterator[str]:
        return iter(self.unpacked())

    def __len__(self) -> int:
        return len(self.unpacked())
