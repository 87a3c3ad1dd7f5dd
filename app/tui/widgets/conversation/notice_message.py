"""A line from the loop or the app that is neither conversation nor error."""
from __future__ import annotations

from dataclasses import dataclass

from textual.content import Content
from textual.widgets import Static

from agent_core.security.visible_text import visible


@dataclass(slots=True)
class NoticeRecord:
    """A paged-out notice: its text."""
    text: str

    def build(self) -> "NoticeMessage":
        return NoticeMessage(self.text)


class NoticeMessage(Static):
    """A line from the loop or the app that is neither conversation nor error."""

    def __init__(self, text: str) -> None:
        self.text = text
        super().__init__(Content(visible(text)), classes="notice")

    def set_text(self, text: str) -> None:
        """The same line with new words (a wait counting its seconds)."""
        self.text = text
        self.update(Content(visible(text)))

    def record(self) -> NoticeRecord:
        return NoticeRecord(self.text)

    def clone(self) -> "NoticeMessage":
        return self.record().build()
