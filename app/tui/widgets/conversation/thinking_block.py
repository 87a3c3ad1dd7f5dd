"""The model's thinking, collapsed under a title that counts its characters: it is rarely what
the user wants to read first."""
from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.strip import Strip

from agent_core.security.visible_text import visible

from app.tui.widgets.conversation.draw import Look, folded


@dataclass(slots=True)
class ThinkingRecord:
    """Thinking: its text so far, collapsed until opened."""
    text: str = ""
    expanded: bool = False

    def heading(self) -> str:
        return f"Thinking · {len(self.text):,} chars" if self.text else "Thinking"

    def draw(self, look: Look, width: int) -> list[Strip]:
        return folded(look, Text(self.heading()), Text(visible(self.text)), width, expanded=self.expanded,
                      style=look.style("muted"))
