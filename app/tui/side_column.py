"""The side column (context, cost, timeline) and what waits for it. The `ctxtui` command mounts it
a frame after the rest (widgets/side_panes.py); what comes for its panes before then (a figure, a
timeline row, /context or /cost) is kept here, in order, and run once the column says it is there."""
from __future__ import annotations

from typing import Any, Callable

from textual.app import App
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widget import MountError, Widget

from app.tui.widgets.side_panes import SidePanes


class SideColumn:
    """Whether the side column is mounted, and the actions waiting for it."""

    def __init__(self) -> None:
        self.ready = False
        self._waiting: list[Callable[[], object]] = []

    def later(self, action: Callable[[], object]) -> None:
        """Run `action` on the side column now, or once it is mounted (in the order given)."""
        if self.ready:
            action()
        else:
            self._waiting.append(action)

    def opened(self) -> None:
        """The column is mounted (SidePanes.Ready): what waited runs now."""
        self.ready = True
        waiting, self._waiting = self._waiting, []
        for action in waiting:
            action()

    @staticmethod
    async def mount(app: App[Any], clock: Callable[[], float]) -> None:
        """Mount the column in the main screen's row; not when the app is closing."""
        try:
            row = app.screen_stack[0].query_one("#main")
            if app.is_running and row.is_attached:
                await row.mount(SidePanes(clock=clock, id="side"))
        except (IndexError, NoMatches, MountError):   # closing: the screen or the row is gone
            return

    @staticmethod
    def toggle(main: Screen[Any], prompt: Widget) -> None:
        """Show or hide the side panes whatever the width (the width's choice is the default).
        Hiding them while one has focus gives the focus to the prompt: left to Textual it went to
        the conversation, so what was typed next was lost and Enter opened a tool block."""
        if main.maximized is not None:     # /cost fills the screen: F2 puts it back, and the prompt gets the focus
            main.minimize()
        side = main.query_one("#side")
        shown = side.display
        focused = main.focused
        main.set_class(not shown, "-side-shown")
        main.set_class(shown, "-side-hidden")
        if shown and focused is not None and side in focused.ancestors_with_self:
            prompt.focus()
