"""/help: keys and slash commands."""
from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
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


FOOT = ("The context pane shows tokens used against the window; ┃ marks the auto-compact threshold. States: "
        "ok → warning → error → auto-compact → blocking (no model call is sent until you /compact).")


def help_rows() -> list[tuple[str, str] | str]:
    """The help as rows: a heading (str) or (key or usage, what it does)."""
    rows: list[tuple[str, str] | str] = ["Commands"]
    rows += [(f"/{c.name} {c.args}".rstrip(), c.help) for c in COMMANDS]
    rows.append("Keys")
    rows += list(KEYS)
    return rows


def help_text() -> Content:
    """The same help as one text (tests, and anywhere a single block is wanted)."""
    parts: list = []
    for row in help_rows():
        parts += [(f"{row}\n", "bold $accent")] if isinstance(row, str) else [(f"  {row[0]}  ", "bold"), f"{row[1]}\n"]
    return Content.assemble(*parts, ("\n" + FOOT, "dim"))


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q", "close", "Close", id="help.close")]

    def compose(self) -> ComposeResult:
        # A row per command and key, the description in a column of its own: at 80 columns a long
        # one wraps under itself, not under the key column.
        with VerticalScroll(id="help-dialog"):
            for i, row in enumerate(help_rows()):
                if isinstance(row, str):
                    first = " -first" if i == 0 else ""
                    yield Static(Content.styled(row, "bold $accent"), classes="help-heading" + first)
                    continue
                with Horizontal(classes="help-row"):
                    yield Static(Content.styled(row[0], "bold"), classes="help-key")
                    yield Static(row[1], classes="help-what")
            yield Static(Content.styled(FOOT, "dim"), classes="help-foot")

    def on_mount(self) -> None:
        self.query_one("#help-dialog").border_title = "Help"

    def action_close(self) -> None:
        self.dismiss(None)
