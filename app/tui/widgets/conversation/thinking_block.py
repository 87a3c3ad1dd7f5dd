"""The model's thinking, collapsed under a title that counts its characters."""
from __future__ import annotations

from dataclasses import dataclass

from textual.content import Content
from textual.widgets import Collapsible, Static

from agent_core.security.visible_text import visible


@dataclass(slots=True)
class ThinkingRecord:
    """Paged-out thinking: its text."""
    text: str

    def build(self) -> "ThinkingBlock":
        return ThinkingBlock(self.text)


class ThinkingBlock(Collapsible):
    """The model's thinking, collapsed: it is rarely what the user wants to read first."""

    def __init__(self, text: str = "") -> None:
        self.text = text
        self.body = Static(Content(visible(text)), classes="thinking-body")
        self._show_scheduled = False
        super().__init__(self.body, title=f"Thinking · {len(text):,} chars" if text else "Thinking", collapsed=True)

    def record(self) -> ThinkingRecord:
        return ThinkingRecord(self.text)

    def clone(self) -> "ThinkingBlock":
        return self.record().build()

    def append(self, text: str) -> None:
        """A delta of the thinking: shown on the next frame (once per frame however many came)."""
        self.text += text
        if not self._show_scheduled:
            self._show_scheduled = True
            self.call_after_refresh(self._show_text)

    def finish(self) -> None:
        """The thinking ended: its text and count are shown now, not on a frame that may come after
        the next block (a snapshot or a screenshot taken then would miss the count)."""
        if self._show_scheduled:
            self._show_text()

    def _show_text(self) -> None:
        if not self._show_scheduled:
            return   # already shown by finish()
        self._show_scheduled = False
        self.body.update(Content(visible(self.text)))
        self.title = Content(f"Thinking · {len(self.text):,} chars")
