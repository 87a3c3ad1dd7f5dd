"""The folder-trust question, asked before the agent starts when the workspace's `.env` tries to
set what only the user may set (API key or endpoint, allowed tools, the state folder). Until the
user trusts the folder those settings are ignored; the answer "trust" is remembered.

The folder's name is the repository's choice, not the user's: it is shown through
`agent_core.security.visible_text` as Content, so `ws\x1b]0;T\x07` reads `ws␛]0;T␇` (and sets no
window title) and `[@click=…]` in it is text, not a link."""
from __future__ import annotations

from pathlib import Path

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from app.stylesheets import stylesheets
from agent_core.security.visible_text import one_line

WHAT = {"ANTHROPIC_API_KEY": "the API key", "ANTHROPIC_BASE_URL": "where requests (and your key) are sent",
        "CTXTUI_ALLOW": "tools that run without asking", "CTXTUI_HOME": "where ctxtui keeps its state"}


class TrustScreen(ModalScreen[str]):
    """Returns "trust" (t), "ignore" (i / Esc: run without those settings) or "quit" (q)."""
    BINDINGS = [
        Binding("t", "answer('trust')", "Trust this folder", id="trust.trust"),
        Binding("i", "answer('ignore')", "Ignore its settings", id="trust.ignore"),
        Binding("escape", "answer('ignore')", "Ignore", show=False),
        Binding("q", "answer('quit')", "Quit", id="trust.quit"),
    ]

    def __init__(self, workspace: Path, dotenv: Path, variables: tuple[str, ...]) -> None:
        super().__init__()
        self.workspace, self.dotenv, self.variables = workspace, dotenv, variables

    def compose(self) -> ComposeResult:
        rows = [Content.assemble(("  " + one_line(v), "bold"), (f"  {WHAT.get(v, '')}\n", "dim"))
                for v in self.variables]
        with Vertical(id="trust-dialog"):
            yield Static(Content.assemble("Do you trust ", (one_line(str(self.workspace)), "bold $accent"), "?"),
                         id="trust-title")
            yield Static(Content.assemble(
                "Its ", (one_line(str(self.dotenv.name)), "bold"), " sets:\n", *rows,
                "\nA repository you cloned can use these to send your key elsewhere or run tools without "
                "asking. Trust the folder only if you wrote that file yourself; the answer is remembered.\n"
                "Ignoring runs ctxtui here with your own settings instead."), id="trust-body")
            with Horizontal(id="trust-buttons"):
                yield Button(Content("Trust [t]"), id="trust", variant="warning")
                yield Button(Content("Ignore its settings [i]"), id="ignore", variant="primary")
                yield Button(Content("Quit [q]"), id="quit", variant="default")

    def on_mount(self) -> None:
        self.query_one("#trust-dialog").border_title = "Folder trust"
        self.query_one("#ignore", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id or "ignore")

    def action_answer(self, answer: str) -> None:
        self.dismiss(answer)


class TrustApp(App[str]):
    """Just the question, before the main app exists (the agent is built from the answer)."""
    CSS_PATH = stylesheets("trust.tcss")

    def __init__(self, workspace: Path, dotenv: Path, variables: tuple[str, ...]) -> None:
        super().__init__()
        self._question = (workspace, dotenv, variables)

    def on_mount(self) -> None:
        self.push_screen(TrustScreen(*self._question), callback=self.exit)
