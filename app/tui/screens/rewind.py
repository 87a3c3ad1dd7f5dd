"""The /rewind picker: the prompts of the working history, newest first. Choosing one cuts the
conversation to just before it and hands the prompt back to the input (agent_core/loop/rewind.py).

Prompts are the user's text, but may hold pasted bytes: shown through `visible_text`, as Content."""
from __future__ import annotations

from typing import Sequence

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from agent_core.loop.rewind import RewindPoint

from app import format as fmt


class RewindScreen(ModalScreen[int | None]):
    """Returns the chosen prompt's index in the history, or None."""

    BINDINGS = [Binding("escape", "close", "Close", id="rewind.close")]

    def __init__(self, points: Sequence[RewindPoint]) -> None:
        super().__init__()
        self.points = list(points)

    def compose(self) -> ComposeResult:
        with Vertical(id="rewind-dialog"):
            if not self.points:
                yield Static("No prompt to go back to in the working history yet.")
                return
            yield Static("Back to just before this prompt: it returns to the input, to edit or send again. "
                         "The session log keeps everything.", id="rewind-about")
            yield OptionList(*[Option(Content.assemble(
                (f"#{p.number:<3}", "bold"), " ", fmt.one_line(p.text, 50),
                (f"  −{p.later_entries}", "dim")), id=str(p.index)) for p in reversed(self.points)],
                id="rewind-list")

    def on_mount(self) -> None:
        self.query_one("#rewind-dialog").border_title = "Rewind the conversation"

    @on(OptionList.OptionSelected)
    def _picked(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(int(event.option.id or -1))

    def action_close(self) -> None:
        self.dismiss(None)
