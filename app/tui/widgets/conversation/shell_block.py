"""A `!command` the user ran (shell mode): the command as they typed it, then what it printed.

Both are outside text (the command's output most of all): shown through `visible` as a Rich
`Text`, never parsed as markup, so `[red]` or an escape sequence in the output is drawn as
written. Closed it shows the first lines of the output; Enter or a click opens it whole."""
from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.strip import Strip

from agent_core.security.visible_text import one_line, visible

from app.tui.widgets.conversation.draw import Look, paragraph

SHOWN_LINES = 12      # the output's lines shown while the block is closed


@dataclass(slots=True)
class ShellRecord:
    """A shell-mode command: running until `output` is set (or it is cancelled)."""
    margin = (1, 0)
    command: str
    output: str | None = None
    is_error: bool = False
    cancelled: bool = False
    expanded: bool = False

    def finish(self, output: str, is_error: bool) -> None:
        self.output, self.is_error = output, is_error

    def cancel(self) -> None:
        self.cancelled = True

    def heading(self) -> Text:
        if self.cancelled:
            tail = "  · cancelled: killed, nothing added to the context"
        elif self.output is None:
            tail = "  · running… (Esc cancels)"
        else:
            tail = "  · added to the context" + ("  · failed" if self.is_error else "")
        return Text.assemble(("! ", "bold"), (one_line(self.command), "bold"), (tail, "dim"))

    def draw(self, look: Look, width: int) -> list[Strip]:
        lines = paragraph(look, self.heading(), width, style=look.style("user"), bar=look.style("user-bar"))
        if self.output is not None and not self.cancelled:
            lines += paragraph(look, Text(visible(self.output)), width, style=look.style("tool-result"), indent=2,
                               max_lines=None if self.expanded else SHOWN_LINES)
        return lines
