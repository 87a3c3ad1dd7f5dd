"""The top line while older messages are paged out of the conversation."""
from __future__ import annotations

from textual.content import Content
from textual.message import Message
from textual.widgets import Static


class EarlierMessages(Static):
    """The top line when older messages are paged out; click (or Enter) shows a page more."""

    can_focus = True
    BINDINGS = [("enter", "show", "Show earlier")]

    class Show(Message):
        pass

    def set_count(self, n: int, page: int) -> None:
        self.update(Content(f"▲ {n:,} earlier messages — click or press Enter to show {min(n, page):,} more "
                            "(the session log keeps everything: /transcripts)"))

    def on_click(self) -> None:
        self.post_message(self.Show())

    def action_show(self) -> None:
        self.post_message(self.Show())
