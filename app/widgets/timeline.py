"""The compaction timeline: one row per compaction (time, layer, trigger, tokens freed, duration)
and per breaker trip, newest at the bottom, as the loop reported them."""
from __future__ import annotations

import time
from typing import Callable

from rich.text import Text
from textual.widgets import DataTable

from agent_core.events import BreakerTripped, Compaction

from .. import format as fmt


class Timeline(DataTable):
    """See module docstring. `clock` is injectable so tests and snapshots show fixed times."""

    def __init__(self, *, clock: Callable[[], float] = time.time, id: str | None = None) -> None:
        super().__init__(id=id, show_cursor=False, cell_padding=1)
        self.clock = clock
        self.count = 0
        self.breaker_trips = 0

    def on_mount(self) -> None:
        self.border_title = "Compactions"
        self.add_column("time", key="time")
        self.add_column("layer", key="layer")
        self.add_column("trigger", key="trigger")
        self.add_column("freed", key="freed")
        self.add_column("took", key="took")

    def add_compaction(self, c: Compaction, at: float | None = None, resumed: bool = False) -> None:
        """`resumed`: from a resumed session; its time is the event's own when it carries one
        (older logs do not: "—" is shown)."""
        if at is None:
            at = (c.timestamp or None) if resumed else self.clock()
        freed = max(0, c.tokens_before - c.tokens_after)
        self.count += 1
        self.add_row(fmt.clock(at), fmt.one_line(c.layer, 12), fmt.one_line(c.trigger, 8),
                     Text(fmt.short_tokens(freed), justify="right"),
                     Text(fmt.duration(c.duration_s), justify="right"), key=f"c{self.count}")
        self.scroll_end(animate=False)

    def add_breaker(self, b: BreakerTripped, at: float | None = None) -> None:
        at = at if at is not None else self.clock()
        self.breaker_trips += 1
        self.count += 1
        # The reason is long; it is in the conversation (and the session log). Here: which breaker.
        self.add_row(fmt.clock(at), Text("breaker", style="bold red"), Text(fmt.one_line(b.breaker, 8), style="red"),
                     Text("—", justify="right"), Text("—", justify="right"), key=f"c{self.count}")
        self.scroll_end(animate=False)

    def reset(self) -> None:
        self.clear()
        self.count = 0
        self.breaker_trips = 0
