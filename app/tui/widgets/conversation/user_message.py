"""A prompt the user sent, as they typed it (outside text: shown through `visible`, never markup)."""
from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from agent_core.security.visible_text import visible


class UserMessage(Static):
    """A prompt the user sent."""

    def __init__(self, text: str) -> None:
        self.text = text
        super().__init__(Content(visible(text)), classes="message")

    def clone(self) -> "UserMessage":
        return UserMessage(self.text)
