"""An answer: its Markdown source. Drawing it needs Rich's Markdown, markdown_it and the Pygments
highlighter (about 50 ms of imports), so assistant_message.py is loaded after the first paint:
by `preload`, which the app calls once its first frame is drawn (while the user types the first
prompt), or with the first answer drawn if that comes sooner."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from textual.strip import Strip

from app.tui.widgets.conversation.draw import Look


@dataclass(slots=True)
class AssistantRecord:
    """An answer: its Markdown source (already passed through `visible`), growing while streamed.
    While `live`, its finished blocks' lines are kept (assistant_message.BlockCache), so each
    flush draws only the block being written; `settle` drops them once the answer is whole."""
    text: str = ""
    live: bool = False
    _blocks: Any = field(default=None, repr=False, compare=False)

    def draw(self, look: Look, width: int) -> list[Strip]:
        from app.tui.widgets.conversation import assistant_message  # noqa: PLC0415 (start-up)
        if not self.live:
            return assistant_message.answer_lines(look, self.text, width)
        if self._blocks is None:
            self._blocks = assistant_message.BlockCache()
        return self._blocks.lines(look, self.text, width)

    def settle(self) -> None:
        """The answer is whole: its lines are what the conversation keeps, the blocks' go."""
        self.live = False
        self._blocks = None


def preload() -> None:
    """Load the answer renderer and its code highlighter now (idle time after the first frame),
    not in the first turn."""
    from app.tui.widgets.conversation import assistant_message  # noqa: PLC0415 (start-up)
    assistant_message.warm()
