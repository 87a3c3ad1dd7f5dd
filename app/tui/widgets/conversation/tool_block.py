"""One tool call: running (⚙), then done (✓), failed (✗) or cancelled (⊘), with its result."""
from __future__ import annotations

import json

from textual.content import Content
from textual.widgets import Collapsible, Static

from agent_core.security.visible_text import one_line, visible

from app import format as fmt

CANCELLED_TOOL = "Cancelled before it finished (the model is told so)."
TOOL_ARG_KEYS = ("command", "path", "pattern", "focus")


def tool_summary(name: str, args: dict, width: int = 70) -> str:
    """The one argument that says what a call does (the command, the path, the pattern)."""
    for k in TOOL_ARG_KEYS:
        if k in args and args[k]:
            return fmt.one_line(str(args[k]), width)
    return fmt.one_line(json.dumps(args, ensure_ascii=False), width) if args else ""


class ToolBlock(Collapsible):
    """One tool call: name and arguments; then the result preview, its size and error state."""

    def __init__(self, call_id: str, name: str, args: dict) -> None:
        self.call_id = call_id
        self.tool_name = name
        self.args = args
        self.summary = tool_summary(name, args)
        self.args_view = Static(Content(visible(json.dumps(args, indent=2, ensure_ascii=False))),
                                classes="tool-args")
        self.result_view = Static(Content("running…"), classes="tool-result")
        super().__init__(self.args_view, self.result_view, title=self._make_title("⚙", ""), collapsed=True,
                         classes="tool -running")
        self.result: tuple[str, int, bool] | None = None
        self.cancelled = False

    def clone(self) -> "ToolBlock":
        block = ToolBlock(self.call_id, self.tool_name, self.args)
        if self.cancelled:
            block.set_cancelled()
        elif self.result is not None:
            block.set_result(*self.result)
        return block

    def _make_title(self, mark: str, tail: str) -> Content:
        return Content.assemble((f"{mark} {one_line(self.tool_name)}", "bold"), "  ", self.summary, (tail, "dim"))

    def set_result(self, preview: str, size: int, is_error: bool) -> None:
        self.result = (preview, size, is_error)
        self.remove_class("-running")
        self.add_class("-error" if is_error else "-ok")
        self.result_view.update(Content(visible(preview) if preview else "(no output)"))
        tail = f"  · {fmt.size(size)}" + ("  · error" if is_error else "")
        self.title = self._make_title("✗" if is_error else "✓", tail)

    def set_cancelled(self) -> None:
        """The call was stopped by a cancel: ⊘ and "cancelled", live or rebuilt from the log (the
        history holds the error result the loop wrote for it), never the running ⚙ nor a failure ✗."""
        self.set_result(CANCELLED_TOOL, 0, True)
        self.cancelled = True
        self.remove_class("-error")
        self.add_class("-cancelled")
        self.title = self._make_title("⊘", "  · cancelled")
