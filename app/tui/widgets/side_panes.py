"""The side column: context, cost and the compaction timeline. The app mounts it just after the
first frame (`SideColumn.mount`), as `textual.lazy.Lazy` would: its two tables are most of
that frame's styling work, and the conversation and the prompt are what a user looks at first.
(Lazy itself is not used: it mounts even when the app is closing, so quitting in the first frame
ended in a MountError.) The column says when it is there (`Ready`); the app then hands it what
came before."""
from __future__ import annotations

from typing import Callable

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message

from app.widgets.context_pane import ContextPane
from app.widgets.cost_pane import CostPane
from app.widgets.timeline import Timeline


class SidePanes(Vertical):
    class Ready(Message):
        """The column and its panes are mounted: they can be queried and given figures."""

    def __init__(self, *, clock: Callable[[], float], id: str | None = None) -> None:
        super().__init__(id=id)
        self.clock = clock

    def compose(self) -> ComposeResult:
        yield ContextPane(id="context-pane")
        yield CostPane(id="cost-pane")
        yield Timeline(id="timeline", clock=self.clock, selectable=True)

    def on_mount(self) -> None:
        self.post_message(self.Ready())
