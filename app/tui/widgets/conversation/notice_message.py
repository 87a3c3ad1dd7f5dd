"""A line from the loop or the app that is neither conversation nor error."""
from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from agent_core.security.visible_text import visible


class NoticeMessage(Static):
    """A line from the loop or the app that is neither conversation nor error."""

    def __init__(self, text: str) -> None:
        self.text = text
        super().__init__(Content(visible(text)), classes="notice")

    def clone(self) -> "NoticeMessage":
        return NoticeMessage(self.text)
