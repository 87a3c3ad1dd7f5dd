"""The model's answer as Markdown, streamed into while it writes."""
from __future__ import annotations

from markdown_it import MarkdownIt
from textual.widgets import Markdown

from agent_core.security.visible_text import visible

from app.tui.widgets.conversation.answer_record import AssistantRecord


def text_only_parser() -> MarkdownIt:
    """Textual's Markdown parser with raw HTML off. With it on, an answer that opens with a tag
    line (`<summary>`, `<analysis>`, which Claude writes) is an HTML block, and Textual draws no
    HTML: the answer showed as a blank line. Off, tags are literal text and the rest is Markdown."""
    return MarkdownIt("gfm-like", {"html": False})


class AssistantMessage(Markdown):
    """Assistant text; streamed into while the model writes (the stream parses with the widget's
    parser, so streamed, final and resumed text render alike)."""

    def __init__(self, markdown: str | None = None) -> None:
        super().__init__(visible(markdown) if markdown else markdown, parser_factory=text_only_parser)

    def record(self) -> AssistantRecord:
        return AssistantRecord(self.source)

    def clone(self) -> "AssistantMessage":
        return AssistantMessage(self.source)
