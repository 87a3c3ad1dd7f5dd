"""A file the prompt attached with `@path`, as one line under the prompt: `📎 src/app.py · 42 lines`.

The path is a file name, outside text: drawn through `one_line` (a newline or an escape sequence
in it is shown, never obeyed) as a Rich `Text`, never markup; a long path is cut to the line."""
from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.strip import Strip

from agent_core.security.visible_text import one_line

from app.tui.widgets.conversation.draw import Look, paragraph


@dataclass(slots=True)
class MentionRecord:
    """An attached file: its path, the lines attached and the file's lines."""
    path: str
    lines: int
    total_lines: int

    def label(self) -> Text:
        if self.lines < self.total_lines:
            size = f"lines 1-{self.lines:,} of {self.total_lines:,}"
        else:
            size = f"{self.total_lines:,} line{'s' if self.total_lines != 1 else ''}"
        return Text.assemble(("@ ", "bold"), (one_line(self.path), "bold"), (f" · {size} · attached", "dim"),
                             no_wrap=True, overflow="ellipsis")

    def draw(self, look: Look, width: int) -> list[Strip]:
        return paragraph(look, self.label(), width, style=look.style("notice"), indent=2, max_lines=1)
