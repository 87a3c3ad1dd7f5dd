"""The permission modal for tools set to ask: shows the call (the command, the path, a diff for
edits) and returns "allow" (a), "always" (A) or "deny" (d / Esc)."""
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

MAX_PREVIEW_LINES = 200


def call_preview(name: str, args: dict) -> Content:
    """What the tool would do, in the form a person checks: command, path, diff, content."""
    if name == "bash":
        return Content.assemble(("$ ", "bold $accent"), (str(args.get("command", "")), "bold"),
                                (f"\n(timeout {args['timeout']} s)" if args.get("timeout") else "", "dim"))
    if name == "edit_file":
        old = str(args.get("old_string", "")).splitlines()
        new = str(args.get("new_string", "")).splitlines()
        path = str(args.get("path", ""))
        lines = list(difflib.unified_diff(old, new, f"a/{path}", f"b/{path}", lineterm="", n=2))
        parts: list = []
        for line in lines[:MAX_PREVIEW_LINES]:
            style = ("$success" if line.startswith("+") else "$error" if line.startswith("-")
                     else "$accent" if line.startswith("@@") else "")
            parts.append((line + "\n", style))
        return Content.assemble(*parts) if parts else Content(f"{path}: no change")
    if name == "write_file":
        body = str(args.get("content", ""))
        lines = body.splitlines()
        more = f"\n… {len(lines) - MAX_PREVIEW_LINES:,} more lines" if len(lines) > MAX_PREVIEW_LINES else ""
        return Content.assemble(("write ", "dim"), (str(args.get("path", "")), "bold"),
                                (f"  ({len(body):,} chars)\n", "dim"),
                                "\n".join(lines[:MAX_PREVIEW_LINES]), (more, "dim"))
    if "path" in args:
        return Content.assemble((str(args["path"]), "bold"), "\n", json.dumps(args, indent=2, ensure_ascii=False))
    return Content(json.dumps(args, indent=2, ensure_ascii=False))


class PermissionScreen(ModalScreen[str]):
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
            yield Static(Content.assemble("The agent wants to run ", (r.name, "bold $accent")),
                         id="permission-title")
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
