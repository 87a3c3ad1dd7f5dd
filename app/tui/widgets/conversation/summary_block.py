"""A compaction summary shown on resume, collapsed: it is long and the marker says what happened."""
from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.strip import Strip

from agent_core.security.visible_text import visible

from app.tui.widgets.conversation.draw import Look, folded


@dataclass(slots=True)
class SummaryRecord:
    """A summary: its text, collapsed until opened."""
    text: str
    expanded: bool = False

    def heading(self) -> str:
        return f"Summary · {len(self.text):,} chars"

    def draw(self, look: Look, width: int) -> list[Strip]:
        return folded(look, Text(self.heading()), Text(visible(self.text)), width, expanded=self.expanded,
                      style=look.style("summary"))
