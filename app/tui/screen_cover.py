"""The main screen covered, by a modal or a maximized pane (/cost), and uncovered: where the focus
goes, and when an Esc counts again as a wish to stop the turn (esc_guard.py).

Maximizing a pane hides the prompt and Textual moves the focus to the next visible widget: the
hidden conversation, so typing went nowhere and Enter opened a tool block nobody saw. Nothing has
the focus while the pane fills the screen; when it is restored the prompt gets it back (unless the
user had focused something else before). When the main screen is back, an Esc pressed until it is
drawn, and a moment after, closed what was in front of it."""
from __future__ import annotations

from typing import Any

from textual.app import App
from textual.screen import Screen
from textual.widget import Widget

from app.tui.esc_guard import EscGuard
from app.tui.main_widgets import MainWidgets


class ScreenCover:
    """Follows the main screen's maximized pane and the modals over it (`watch`, once mounted)."""

    def __init__(self, app: App[Any], widgets: MainWidgets, esc: EscGuard) -> None:
        self._app = app
        self._widgets = widgets
        self._esc = esc
        self._focus_before_max: Widget | None = None

    def watch(self) -> None:
        """Start following: the main screen's `maximized`, and each screen change."""
        app = self._app
        app.watch(app.screen, "maximized", self._maximized_changed, init=False)
        app.screen_change_signal.subscribe(app, self._screen_changed)

    def _maximized_changed(self, maximized: Widget | None) -> None:
        screen, prompt = self._app.screen, self._widgets.prompt_input
        if maximized is not None:
            self._focus_before_max = screen.focused
            screen.set_focus(None)
            return
        self._uncovered()
        if self._focus_before_max in (None, prompt):
            prompt.focus()

    def _screen_changed(self, screen: Screen[Any]) -> None:
        """A modal closed (the main screen is back): an Esc pressed on it must not cancel the turn."""
        if screen is self._app.screen_stack[0]:
            self._uncovered()

    def _uncovered(self) -> None:
        """The main screen is back, not drawn yet (on a loaded machine the redraw takes seconds)."""
        self._esc.covered_until_drawn()
        self._app.call_after_refresh(self._esc.drawn)
