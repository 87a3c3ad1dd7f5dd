"""One tool call: running (⚙), then done (✓), failed (✗) or cancelled (⊘), with its result.

The call is a small `ToolRecord` (name, input, result preview, size, error, cancelled) that the
conversation draws as one title line, and, opened, the input and the result under it. A record
paged out of the view is the same object, so a result that arrives late still lands on it."""
from __future__ import annotations

import json
from dataclasses import dataclass

from rich.text import Text
from textual.strip import Strip

from agent_core.security.visible_text import one_line, visible

from app import format as fmt
from app.tui.widgets.conversation.draw import Look, paragraph, title

CANCELLED_TOOL = "Cancelled before it finished (the model is told so)."
TOOL_ARG_KEYS = ("command", "path", "pattern", "focus")
RESULT_LINES = 20       # an opened result shows this many lines (the transcripts hold all of it)


def tool_summary(name: str, args: dict, width: int = 70) -> str:
    """The one argument that says what a call does (the command, the path, the pattern)."""
    for k in TOOL_ARG_KEYS:
        if k in args and args[k]:
            return fmt.one_line(str(args[k]), width)
    return fmt.one_line(json.dumps(args, ensure_ascii=False), width) if args else ""


@dataclass(slots=True)
class ToolRecord:
    """A tool call as data: what its block shows."""
    call_id: str
    name: str
    args: dict
    result: tuple[str, int, bool] | None = None      # (preview, size in bytes, is_error)
    cancelled: bool = False
    expanded: bool = False

    def set_result(self, preview: str, size: int, is_error: bool) -> None:
        self.result = (preview, size, is_error)

    def set_cancelled(self) -> None:
        self.result = (CANCELLED_TOOL, 0, True)
        self.cancelled = True

    @property
    def state(self) -> str:
        """-running, -ok, -error or -cancelled (its title's colour)."""
        if self.cancelled:
            return "-cancelled"
        if self.result is None:
            return "-running"
        return "-error" if self.result[2] else "-ok"

    @property
    def mark(self) -> str:
        return {"-cancelled": "⊘", "-running": "⚙", "-error": "✗", "-ok": "✓"}[self.state]

    def heading(self) -> Text:
        if self.cancelled:
            tail = "  · cancelled"
        elif self.result is None:
            tail = ""
        else:
            _, size, is_error = self.result
            tail = f"  · {fmt.size(size)}" + ("  · error" if is_error else "")
        return Text.assemble((f"{self.mark} {one_line(self.name)}", "bold"), "  ",
                             tool_summary(self.name, self.args), (tail, "dim"))

    def result_text(self) -> str:
        if self.result is None:
            return "running…"
        return visible(self.result[0]) if self.result[0] else "(no output)"

    def draw(self, look: Look, width: int) -> list[Strip]:
        state = "tool-error" if self.state in ("-error", "-cancelled") else f"tool{self.state}"
        lines = title(look, self.heading(), width, expanded=self.expanded, style=look.style(state))
        if self.expanded:
            args = visible(json.dumps(self.args, indent=2, ensure_ascii=False))
            lines += paragraph(look, Text(args), width, style=look.style("muted"), indent=4, left=0)
            lines += paragraph(look, Text(self.result_text()), width, style=look.style("tool-result"), indent=4,
                               max_lines=RESULT_LINES)
        return lines
