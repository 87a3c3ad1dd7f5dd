"""/help: keys and slash commands."""
from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from app.tui.commands import COMMANDS

KEYS = (
    ("Enter", "send the prompt"),
    ("Shift+Enter / Ctrl+J", "new line in the prompt"),
    ("Up / Down", "prompt history (at the first / last line)"),
    ("Tab", "complete a slash command"),
    ("!command", "shell mode: run it in the workspace; it and its output join the context"),
    ("Shift+Tab / click", "focus the conversation: Up / Down between blocks"),
    ("Enter / click", "open or close a block; inspect a compaction"),
    ("Esc", "cancel the running turn; close a screen"),
    ("F1", "this help"),
    ("Ctrl+P", "command palette (the same commands)"),
    ("Ctrl+T", "transcript browser"),
    ("Ctrl+O", "full context breakdown"),
    ("F2 / Ctrl+B", "show or hide the side panes (hidden under 120 columns)"),
    ("Alt+Up / Alt+Down", "move the auto-compact threshold by 1% (kept for this model)"),
    ("Ctrl+Q", "quit"),
)


def help_text() -> Content:
    parts: list = [("Commands\n", "bold $accent")]
    for c in COMMANDS:
        usage = f"  /{c.name} {c.args}"
        # a usage wider than its column takes a line of its own, its help under it in the column
        parts += [(usage.ljust(24) if len(usage) < 24 else usage + "\n" + " " * 24, "bold"), f"{c.help}\n"]
    parts.append(("\nKeys\n", "bold $accent"))
    for k, what in KEYS:
        parts += [(f"  {k}".ljust(24), "bold"), f"{what}\n"]
    parts.append(("\nThe context pane shows tokens used against the window; ┃ marks the auto-compact "
                  "threshold. States: ok → warning → error → auto-compact → blocking (no model call is "
                  "sent until you /compact).", "dim"))
    return Content.assemble(*parts)


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q", "close", "Close", id="help.close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-dialog"):
            yield Static(help_text())

    def on_mount(self) -> None:
        self.query_one("#help-dialog").border_title = "Help"

    def action_close(self) -> None:
        self.dismiss(None)
