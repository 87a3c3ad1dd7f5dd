"""A prompt the user sent, as they typed it (outside text: shown through `visible`, never markup)."""
from __future__ import annotations

from dataclasses import dataclass

from textual.content import Content
from textual.widgets import Static

from agent_core.security.visible_text import visible


@dataclass(slots=True)
class UserRecord:
    """A paged-out prompt: its text."""
    text: str

    def build(self) -> "UserMessage":
        return UserMessage(self.text)


class UserMessage(Static):
    """A prompt the user sent."""

    def __init__(self, text: str) -> None:
        self.text = text
        super().__init__(Content(visible(text)), classes="message")

    def record(self) -> UserRecord:
        return UserRecord(self.text)

    def clone(self) -> "UserMessage":
        return self.record().build()
