"""One tool call: running (⚙), then done (✓), failed (✗) or cancelled (⊘), with its result.

The call's state is a small `ToolRecord` (name, input, result preview, size, error, cancelled): the
block shows it, and a block paged out of the conversation keeps only the record (the result can
still arrive then). Collapsed, which is how blocks are made and how most stay, a block is two
widgets (itself and its title); its body (the input and the result, each one Static whose Content
is built once) is made and mounted the first time it is expanded."""
from __future__ import annotations

import json
from dataclasses import dataclass

from textual.app import ComposeResult
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


@dataclass(slots=True)
class ToolRecord:
    """A tool call as data: what the block shows, live or paged out."""
    call_id: str
    name: str
    args: dict
    result: tuple[str, int, bool] | None = None      # (preview, size in bytes, is_error)
    cancelled: bool = False

    def set_result(self, preview: str, size: int, is_error: bool) -> None:
        self.result = (preview, size, is_error)

    def set_cancelled(self) -> None:
        self.result = (CANCELLED_TOOL, 0, True)
        self.cancelled = True

    @property
    def state(self) -> str:
        """The block's class: -running, -ok, -error or -cancelled."""
        if self.cancelled:
            return "-cancelled"
        if self.result is None:
            return "-running"
        return "-error" if self.result[2] else "-ok"

    def build(self) -> "ToolBlock":
        return ToolBlock.of(self)


STATES = ("-running", "-ok", "-error", "-cancelled")


class ToolBlock(Collapsible):
    """One tool call: name and arguments; then the result preview, its size and error state."""

    # No Contents container: the body (input, result) sits under the title where Collapsible's
    # Contents would put it (styles/conversation.tcss had it at `padding: 0 0 0 3`).
    DEFAULT_CSS = """
    ToolBlock > .tool-body { margin: 0 0 0 3; }
    ToolBlock.-collapsed > .tool-body { display: none; }
    """

    def __init__(self, call_id: str, name: str, args: dict, *, record: ToolRecord | None = None) -> None:
        self.data = record if record is not None else ToolRecord(call_id, name, args)
        self.summary = tool_summary(self.data.name, self.data.args)
        self._args_view: Static | None = None
        self._result_view: Static | None = None
        super().__init__(title=self._heading(), collapsed=True, classes=f"tool {self.data.state}")

    @classmethod
    def of(cls, record: ToolRecord) -> "ToolBlock":
        """The block of a record (a paged-out call shown again): it shares the record."""
        return cls(record.call_id, record.name, record.args, record=record)

    # what the tests and the app read ------------------------------------------------------------
    call_id = property(lambda self: self.data.call_id)
    tool_name = property(lambda self: self.data.name)
    args = property(lambda self: self.data.args)
    result = property(lambda self: self.data.result)
    cancelled = property(lambda self: self.data.cancelled)

    def record(self) -> ToolRecord:
        return self.data

    def clone(self) -> "ToolBlock":
        return ToolBlock.of(ToolRecord(self.data.call_id, self.data.name, self.data.args, self.data.result,
                                       self.data.cancelled))

    # the body, made when first wanted -------------------------------------------------------------
    @property
    def args_view(self) -> Static:
        if self._args_view is None:
            self._args_view = Static(Content(visible(json.dumps(self.data.args, indent=2, ensure_ascii=False))),
                                     classes="tool-args tool-body")
        return self._args_view

    @property
    def result_view(self) -> Static:
        if self._result_view is None:
            self._result_view = Static(self._result_content(), classes="tool-result tool-body")
        return self._result_view

    def _result_content(self) -> Content:
        if self.data.result is None:
            return Content("running…")
        preview = self.data.result[0]
        return Content(visible(preview) if preview else "(no output)")

    def compose(self) -> ComposeResult:
        yield self._title
        if not self.collapsed:
            yield self.args_view
            yield self.result_view

    def watch_collapsed(self, collapsed: bool) -> None:
        if not collapsed and self.is_mounted and not self.args_view.is_attached:
            self.mount(self.args_view, self.result_view)

    # state ----------------------------------------------------------------------------------------
    def _heading(self) -> Content:
        d = self.data
        if d.cancelled:
            mark, tail = "⊘", "  · cancelled"
        elif d.result is None:
            mark, tail = "⚙", ""
        else:
            _, size, is_error = d.result
            mark = "✗" if is_error else "✓"
            tail = f"  · {fmt.size(size)}" + ("  · error" if is_error else "")
        return Content.assemble((f"{mark} {one_line(d.name)}", "bold"), "  ", self.summary, (tail, "dim"))

    def _show_state(self) -> None:
        state = self.data.state
        if not self.has_class(state):      # one restyle for the change, none when it is the same
            self.remove_class(*STATES, update=False)
            self.add_class(state)
        if self._result_view is not None:
            self._result_view.update(self._result_content())
        self.title = self._heading()

    def set_result(self, preview: str, size: int, is_error: bool) -> None:
        self.data.set_result(preview, size, is_error)
        self._show_state()

    def set_cancelled(self) -> None:
        """The call was stopped by a cancel: ⊘ and "cancelled", live or rebuilt from the log (the
        history holds the error result the loop wrote for it), never the running ⚙ nor a failure ✗."""
        self.data.set_cancelled()
        self._show_state()
