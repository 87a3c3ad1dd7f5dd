"""An answer: its Markdown source. Drawing it needs Rich's Markdown, markdown_it and the Pygments
highlighter (about 50 ms of imports), so assistant_message.py is loaded after the first paint:
by `preload`, which the app calls once its first frame is drawn (while the user types the first
prompt), or with the first answer drawn if that comes sooner."""
from __future__ import annotations

from dataclasses import dataclass

from textual.strip import Strip

from app.tui.widgets.conversation.draw import Look


@dataclass(slots=True)
class AssistantRecord:
    """An answer: its Markdown source (already passed through `visible`), growing while streamed."""
    text: str = ""

    def draw(self, look: Look, width: int) -> list[Strip]:
        from app.tui.widgets.conversation.assistant_message import answer_lines  # noqa: PLC0415 (start-up)
        return answer_lines(look, self.text, width)


def preload() -> None:
    """Load the answer renderer and its code highlighter now (idle time after the first frame),
    not in the first turn."""
    from app.tui.widgets.conversation import assistant_message  # noqa: PLC0415 (start-up)
    assistant_message.warm()
