"""A prompt the user sent, as they typed it (outside text: shown through `visible`, never markup)."""
from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.strip import Strip

from agent_core.security.visible_text import visible

from app.tui.widgets.conversation.draw import Look, paragraph


@dataclass(slots=True)
class UserRecord:
    """A prompt: its text. Drawn bold on a raised background behind a bar, a line below the last block."""
    margin = (1, 0)     # blank lines above and below (collapsed with the neighbours')
    text: str

    def draw(self, look: Look, width: int) -> list[Strip]:
        return paragraph(look, Text(visible(self.text)), width, style=look.style("user"),
                                        bar=look.style("user-bar"))
