"""Streamed text gathered and drawn in bursts. The deltas of one model call (an answer, its
thinking, a compaction's summary) come many a frame: each is added to its record's pending text,
and every record with some is drawn once at most every `TEXT_FLUSH_S`, a tenth of a second, faster
than anyone reads. The text is someone else's: it is made visible (escapes shown, not obeyed) on
its way in."""
from __future__ import annotations

from typing import Callable, Protocol

from textual.timer import Timer
from textual.widget import Widget

from agent_core.security.visible_text import visible

TEXT_FLUSH_S = 0.1   # how often gathered text (an answer, thinking, a summary) is drawn again


class Written(Protocol):
    """A record that streamed text is added to."""
    text: str


class GatheredText:
    """Pending deltas by record; `changed(record)` draws a record again once its text grew."""

    def __init__(self, owner: Widget, changed: Callable[[Written], None]) -> None:
        self._owner = owner             # whose timer flushes
        self._changed = changed
        self._pending: dict[int, tuple[Written, list[str]]] = {}
        self._timer: Timer | None = None

    def __bool__(self) -> bool:
        """Whether any text waits to be drawn."""
        return bool(self._pending)

    def add(self, record: Written, text: str) -> None:
        entry = self._pending.setdefault(id(record), (record, []))
        entry[1].append(text)
        if self._timer is None:
            self._timer = self._owner.set_timer(TEXT_FLUSH_S, self.flush, name="flush text")

    def flush(self) -> None:
        """Draw what was gathered (each record once, however many deltas came)."""
        self._timer = None
        pending, self._pending = self._pending, {}
        for record, parts in pending.values():
            record.text += visible("".join(parts))
            self._changed(record)

    def flush_now(self) -> None:
        """Draw what was gathered now, not when the timer fires (an answer ends)."""
        if self._timer is not None:
            self._timer.stop()
        self.flush()
