"""The main screen's widgets, each found once and held. A query walks the DOM, the conversation
is thousands of records before the panes, and the loop's handlers ask for a widget per event."""
from __future__ import annotations

from typing import Any, TypeVar

from textual.app import App
from textual.dom import DOMNode
from textual.widget import Widget

from app.tui.widgets.conversation.container import Conversation
from app.tui.widgets.prompt import PromptInput
from app.tui.widgets.status import StatusBar
from app.widgets.context_pane import ContextPane
from app.widgets.cost_pane import CostPane
from app.widgets.timeline import Timeline

W = TypeVar("W", bound=Widget)


class MainWidgets:
    """The widgets of the app's first screen (the side panes once the column is mounted)."""

    def __init__(self, app: App[Any]) -> None:
        self._app = app
        self._found: dict[type[Widget], Widget] = {}

    def get(self, kind: type[W]) -> W:
        """The main screen's widget of this type. Raises NoMatches once the app is closing and the
        widgets are gone, as the query does."""
        held = self._found.get(kind)
        if isinstance(held, kind) and held.is_attached:
            return held
        root: DOMNode = self._app.screen_stack[0] if self._app.screen_stack else self._app
        found = root.query_one(kind)
        self._found[kind] = found
        return found

    @property
    def conversation(self) -> Conversation:
        return self.get(Conversation)

    @property
    def prompt_input(self) -> PromptInput:
        return self.get(PromptInput)

    @property
    def context_pane(self) -> ContextPane:
        return self.get(ContextPane)

    @property
    def cost_pane(self) -> CostPane:
        return self.get(CostPane)

    @property
    def timeline(self) -> Timeline:
        return self.get(Timeline)

    @property
    def status(self) -> StatusBar:
        return self.get(StatusBar)
