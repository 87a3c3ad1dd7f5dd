"""A line from the loop or the app that is neither conversation nor error."""
from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.strip import Strip

from agent_core.security.visible_text import visible

from app.tui.widgets.conversation.draw import Look, paragraph


@dataclass(slots=True)
class NoticeRecord:
    """A notice: its text (a wait counting its seconds changes it in place: `Conversation.set_notice`)."""
    text: str

    def draw(self, look: Look, width: int) -> list[Strip]:
        return paragraph(look, Text(visible(self.text)), width, style=look.style("notice"))
