"""The permission modal for tools set to ask: shows the call (the command, the path, a diff for
edits) and returns "allow" (a), "always" (A) or "deny" (d / Esc).

What is shown is exactly what will run, with every control character made visible
(`agent_core.security.visible_text`): `echo PWNED > f #` + spaces + `\r\x1b[2K ls -la` reads
`… ␍␛[2K ls -la`, not just `ls -la`. When the call holds anything a terminal would act on or hide
(control characters, bidi overrides, a long run of blanks), a warning line above the call says
what, in words. The text is handed to Textual as Content, never parsed as markup."""
from __future__ import annotations

import difflib
import json

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from agent_core.events import PermissionRequest
from agent_core.security.visible_text import hidden_characters, one_line, visible

MAX_PREVIEW_LINES = 200


def _strings(value) -> list[str]:
    """Every string in a tool's arguments (keys too), depth first."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _strings(v)]
    return []


def call_warning(name: str, args: dict) -> str:
    """One line saying what in the call a terminal would act on or hide ("" when nothing): the
    person deciding must know that what they read is not plain text."""
    command = name == "bash" and isinstance(args.get("command"), str)
    found = hidden_characters(args["command"] if command else "\n".join(_strings(args)))
    if not found:
        return ""
    what = "this command contains" if command else "these arguments contain"
    return (f"⚠ {what} {'; '.join(found)}. Each is shown below as it will run (␛ is ESC, ␍ a carriage "
            "return): read the call to its end.")


def call_preview(name: str, args: dict) -> Content:
    """What the tool would do, in the form a person checks: command, path, diff, content."""
    if name == "bash":
        return Content.assemble(("$ ", "bold $accent"), (visible(str(args.get("command", ""))), "bold"),
                                (f"\n(timeout {one_line(str(args['timeout']))} s)" if args.get("timeout") else "",
                                 "dim"))
    if name == "edit_file":
        # visible() first: a carriage return must show as ␍, not split the diff's lines.
        old = visible(str(args.get("old_string", ""))).splitlines()
        new = visible(str(args.get("new_string", ""))).splitlines()
        path = one_line(str(args.get("path", "")))
        lines = list(difflib.unified_diff(old, new, f"a/{path}", f"b/{path}", lineterm="", n=2))
        parts: list = []
        for line in lines[:MAX_PREVIEW_LINES]:
            style = ("$success" if line.startswith("+") else "$error" if line.startswith("-")
                     else "$accent" if line.startswith("@@") else "")
            parts.append((line + "\n", style))
        return Content.assemble(*parts) if parts else Content(f"{path}: no change")
    if name == "write_file":
        body = str(args.get("content", ""))
        lines = visible(body).splitlines()
        more = f"\n… {len(lines) - MAX_PREVIEW_LINES:,} more lines" if len(lines) > MAX_PREVIEW_LINES else ""
        return Content.assemble(("write ", "dim"), (one_line(str(args.get("path", ""))), "bold"),
                                (f"  ({len(body):,} chars)\n", "dim"),
                                "\n".join(lines[:MAX_PREVIEW_LINES]), (more, "dim"))
    # json.dumps writes C0 controls as \u001b; C1 controls and bidi overrides it leaves: visible().
    if "path" in args:
        return Content.assemble((one_line(str(args["path"])), "bold"), "\n",
                                visible(json.dumps(args, indent=2, ensure_ascii=False)))
    return Content(visible(json.dumps(args, indent=2, ensure_ascii=False)))


class PermissionScreen(ModalScreen[str]):
    DEFAULT_CSS = """
    #permission-warning { margin-bottom: 1; }
    """
    BINDINGS = [
        Binding("a", "answer('allow')", "Allow once", id="permission.allow"),
        Binding("A", "answer('always')", "Always allow", id="permission.always"),
        Binding("d", "answer('deny')", "Deny", id="permission.deny"),
        Binding("escape", "answer('deny')", "Deny", show=False),
    ]

    def __init__(self, request: PermissionRequest) -> None:
        super().__init__()
        self.request = request

    def compose(self) -> ComposeResult:
        r = self.request
        with Vertical(id="permission-dialog"):
            yield Static(Content.assemble("The agent wants to run ", (one_line(r.name), "bold $accent")),
                         id="permission-title")
            if r.note:
                style = "$success" if "UNCONFINED" not in r.note else "bold $warning"
                yield Static(Content.styled(one_line(r.note), style), id="permission-note")
            warning = call_warning(r.name, r.input)
            if warning:
                yield Static(Content.styled(warning, "bold $warning"), id="permission-warning")
            with VerticalScroll(id="permission-call"):
                yield Static(call_preview(r.name, r.input), id="permission-preview")
            with Horizontal(id="permission-buttons"):
                yield Button(Content("Allow once [a]"), id="allow", variant="success")
                yield Button(Content("Always allow [A]"), id="always", variant="primary")
                yield Button(Content("Deny [d]"), id="deny", variant="error")

    def on_mount(self) -> None:
        self.query_one("#permission-dialog").border_title = "Permission"
        self.query_one("#deny", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id or "deny")

    def action_answer(self, answer: str) -> None:
        self.dismiss(answer)
