"""A unified diff on screen: `/diff` (the session's changes to files) and, before `/rewind` puts
files back, what that restore would change (returns "files", "conversation" or None).

A diff is the workspace's bytes, someone else's text: every line goes through `visible` and is
handed to Textual as Content, never parsed as markup. A very long diff is shown up to MAX_LINES
lines and says how many more there are."""
from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from agent_core.security.visible_text import visible

MAX_LINES = 5_000


def diff_content(text: str) -> Content:
    """The diff, coloured the usual way: + green, - red, @@ and file headers set apart."""
    lines = text.splitlines()
    parts: list = []
    for line in lines[:MAX_LINES]:
        shown = visible(line)
        style = ("bold" if line.startswith(("+++", "---")) else "$success" if line.startswith("+")
                 else "$error" if line.startswith("-") else "$accent" if line.startswith("@@") else "")
        parts.append((shown + "\n", style))
    if len(lines) > MAX_LINES:
        parts.append((f"… {len(lines) - MAX_LINES:,} more lines not shown", "dim"))
    return Content.assemble(*parts)


class DiffScreen(ModalScreen[str | None]):
    """`/diff`: Esc or q closes. With `ask_restore`: r restores the files too, c rewinds the
    conversation only, Esc cancels the rewind."""

    BINDINGS = [Binding("escape", "close", "Close", id="diff.close"),
                Binding("q", "close", "Close", show=False)]

    def __init__(self, title: str, about: str, diff: str, *, ask_restore: bool = False) -> None:
        super().__init__()
        self.title_text, self.about, self.diff, self.ask_restore = title, about, diff, ask_restore

    def compose(self) -> ComposeResult:
        with Vertical(id="diff-dialog"):
            yield Static(Content(visible(self.about)), id="diff-about")   # it names files: their bytes
            with VerticalScroll(id="diff-scroll"):
                yield Static(diff_content(self.diff) if self.diff else Content("No changes."), id="diff-body")
            keys = ("[r] restore the files too   [c] the conversation only   [Esc] cancel" if self.ask_restore
                    else "[Esc] close   ↑ ↓ PgUp PgDn scroll")
            yield Static(Content(keys), id="diff-keys")

    def on_mount(self) -> None:
        self.query_one("#diff-dialog").border_title = self.title_text
        self.query_one("#diff-scroll").focus()

    def on_key(self, event) -> None:
        if self.ask_restore and event.key in ("r", "c"):
            event.stop()
            self.dismiss("files" if event.key == "r" else "conversation")

    def action_close(self) -> None:
        self.dismiss(None)
