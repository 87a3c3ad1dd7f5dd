"""/sandbox: whether bash runs in the OS sandbox, what it confines, and the mode to choose
(as Claude Code's /sandbox panel has it): auto-allow (sandboxed commands run without asking), ask
(they still ask) or off. Choosing returns the mode; the app applies it from the next command. When
the sandbox cannot run here, the screen says why and how to fix it."""
from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from agent_core.os_sandbox.sandbox import SandboxStatus
from agent_core.security.visible_text import one_line

from app.stylesheets import stylesheets

MODES = (("auto-allow", "sandboxed commands run without a permission prompt"),
         ("ask", "commands run in the sandbox and still ask first"),
         ("off", "commands run unconfined, with your rights (and ask first)"))


def status_lines(s: SandboxStatus) -> Content:
    """The sandbox's state and boundary, as the screen and /context show it."""
    if s.mode == "off":
        state = Content.styled("off: bash runs unconfined, with your rights", "bold $warning")
    elif not s.confined:
        state = Content.styled("chosen, but it cannot run here: every bash command asks", "bold $error")
    else:
        state = Content.styled(f"on ({s.mode})", "bold $success")
    parts: list = [("Sandbox  ", "bold"), state, "\n"]
    if s.problem:
        parts += [(one_line(s.problem), "$error"), "\n"]
    parts += [("Network  ", "bold"), one_line(s.network), "\n",
              ("Writable ", "bold"), one_line(", ".join(s.writable)), "\n",
              ("Hidden   ", "bold"), one_line(", ".join(s.hidden) or "(none of the secret folders exist)")]
    if s.blocked:
        parts += ["\n", ("Refused  ", "bold"), one_line(", ".join(s.blocked))]
    return Content.assemble(*parts)


class SandboxScreen(ModalScreen[str | None]):
    """Returns the mode chosen, or None when closed."""

    CSS_PATH = stylesheets("sandbox.tcss")
    BINDINGS = [Binding("escape,q", "close", "Close", id="sandbox.close")]

    def __init__(self, status: SandboxStatus) -> None:
        super().__init__()
        self.status = status

    def compose(self) -> ComposeResult:
        with Vertical(id="sandbox-dialog"):
            yield Static(status_lines(self.status), id="sandbox-status")
            yield OptionList(*[Option(Content.assemble(("● " if m == self.status.mode else "  ", "bold $accent"),
                                                       (m.ljust(11), "bold"), what), id=m) for m, what in MODES],
                             id="sandbox-modes")
            yield Static(Content.styled("Enter chooses (from the next command; --sandbox or the sandbox setting "
                                        "keeps it) · Esc closes", "$text-muted"), id="sandbox-keys")

    def on_mount(self) -> None:
        self.query_one("#sandbox-dialog").border_title = "OS sandbox (bash and shell mode)"
        modes = self.query_one("#sandbox-modes", OptionList)
        modes.highlighted = next((i for i, (m, _) in enumerate(MODES) if m == self.status.mode), 0)
        modes.focus()

    @on(OptionList.OptionSelected)
    def _picked(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_close(self) -> None:
        self.dismiss(None)
