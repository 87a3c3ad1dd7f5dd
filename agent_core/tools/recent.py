"""Which files the model has seen lately, newest first: after an auto-compact the loop re-injects
the most recent few (DESIGN §5.6), so the model does not have to read them again."""
from __future__ import annotations

import itertools
import time
from pathlib import Path


class RecentFiles:
    """path -> time of last read (or write). Bounded; ties in time keep the order of recording."""

    def __init__(self, max_entries: int = 200) -> None:
        self.max_entries = max_entries
        self._seen: dict[Path, tuple[float, int]] = {}
        self._seq = itertools.count()

    def record(self, path: Path | str, when: float | None = None) -> None:
        self._seen[Path(path)] = (time.time() if when is None else when, next(self._seq))
        if len(self._seen) > self.max_entries:
            oldest = min(self._seen, key=self._seen.__getitem__)
            del self._seen[oldest]

    def forget(self, path: Path | str) -> None:
        self._seen.pop(Path(path), None)

    def recent(self, n: int | None = None) -> list[Path]:
        """The `n` most recently recorded paths, most recent first (all when n is None)."""
        order = sorted(self._seen, key=self._seen.__getitem__, reverse=True)
        return order if n is None else order[:max(n, 0)]

    def last_seen(self, path: Path | str) -> float | None:
        hit = self._seen.get(Path(path))
        return hit[0] if hit else None

    def __len__(self) -> int:
        return len(self._seen)

    def to_dict(self) -> dict:
        """JSON form for the session log (oldest first, so replaying `record` restores the order)."""
        return {"files": [[str(p), self._seen[p][0]] for p in reversed(self.recent())]}

    @classmethod
    def from_dict(cls, data: dict, max_entries: int = 200) -> "RecentFiles":
        rf = cls(max_entries)
        for path, when in data.get("files", []):
            rf.record(path, float(when))
        return rf
