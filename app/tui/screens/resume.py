"""The /resume picker: a list of this workspace's other ctxtui sessions, newest first.

Session ids and titles are someone else's bytes: shown through `agent_core.security.visible_text`
and as Content, never as markup."""
from __future__ import annotations

from pathlib import Path

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from agent_core.logs.discover import list_sessions
from agent_core.security.visible_text import one_line

from app import format as fmt


class ResumeScreen(ModalScreen[str | None]):
    """/resume: pick a ctxtui session (newest first); returns its id or None."""

    BINDINGS = [Binding("escape", "close", "Close", id="resume.close")]

    def __init__(self, sessions_root: Path | None, current: str = "") -> None:
        super().__init__()
        self.sessions_root = sessions_root
        self.current = current

    def compose(self) -> ComposeResult:
        home = self.sessions_root.parent if self.sessions_root is not None else None
        sessions = [s for s in (list_sessions(home) if home is not None else []) if s.session_id != self.current]
        with Vertical(id="resume-dialog"):
            if not sessions:
                yield Static("No other saved sessions yet.")
            else:
                yield OptionList(*[Option(Content.assemble(
                    (one_line(s.session_id), "bold"), f"  {fmt.date_time(s.modified)}  {fmt.size(s.size)}  ",
                    (fmt.one_line(s.title or "", 40), "italic")), id=s.session_id) for s in sessions],
                    id="resume-list")

    def on_mount(self) -> None:
        self.query_one("#resume-dialog").border_title = "Resume a session"

    @on(OptionList.OptionSelected)
    def _picked(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_close(self) -> None:
        self.dismiss(None)
