"""A compaction summary shown on resume, collapsed."""
from __future__ import annotations

from dataclasses import dataclass

from textual.content import Content
from textual.widgets import Collapsible, Static

from agent_core.security.visible_text import visible


@dataclass(slots=True)
class SummaryRecord:
    """A paged-out summary: its text."""
    text: str

    def build(self) -> "SummaryBlock":
        return SummaryBlock(self.text)


class SummaryBlock(Collapsible):
    """A compaction summary (on resume): collapsed, it is long and the marker says what happened."""

    def __init__(self, text: str) -> None:
        self.text = text
        super().__init__(Static(Content(visible(text))), title=f"Summary · {len(text):,} chars", collapsed=True,
                         classes="summary")

    def record(self) -> SummaryRecord:
        return SummaryRecord(self.text)

    def clone(self) -> "SummaryBlock":
        return self.record().build()
