"""The model's thinking, collapsed under a title that counts its characters."""
from __future__ import annotations

from textual.content import Content
from textual.widgets import Collapsible, Static

from agent_core.security.visible_text import visible


class ThinkingBlock(Collapsible):
    """The model's thinking, collapsed: it is rarely what the user wants to read first."""

    def __init__(self, text: str = "") -> None:
        self.text = text
        self.body = Static(Content(visible(text)), classes="thinking-body")
        super().__init__(self.body, title=f"Thinking · {len(text):,} chars" if text else "Thinking", collapsed=True)

    def clone(self) -> "ThinkingBlock":
        return ThinkingBlock(self.text)

    def append(self, text: str) -> None:
        self.text += text
        self.body.update(Content(visible(self.text)))
        self.title = Content(f"Thinking · {len(self.text):,} chars")
