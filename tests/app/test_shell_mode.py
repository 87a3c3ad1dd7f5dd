"""Shell mode in the TUI: `!command` runs the user's command in the workspace (no permission
modal), shows its output escaped, puts it in the context as their message without a model call,
can be cancelled with Esc, survives resume, and the prompt says it is in shell mode."""
from __future__ import annotations

import pytest

from agent_core import events as ev
from agent_core.loop.shell_input import shell_of
from app.tui import commands
from app.tui.app import CtxApp
from app.tui.screens.help import help_text
from app.tui.screens.permission import PermissionScreen
from app.tui.widgets.conversation.shell_block import ShellRecord
from compaction.entry import project
from compaction.validate import validate_history
from tests.agent_helpers import make_workspace
from tests.app.snapshot_helpers import fill, settled
from tests.app.tui_helpers import make_app, wait_idle
from tests.pilot_until import until
from tests.tui_fakes import FIXED_TIME, FakeAgent

SIZE = (80, 24)


@pytest.fixture
def workspace(tmp_path):
    return make_workspace(tmp_path)


async def type_and_send(app, pilot, text: str) -> None:
    app.prompt_input.focus()
    app.fill_prompt(text)
    await pilot.press("enter")


async def test_a_command_runs_without_asking_and_its_output_joins_the_context(workspace):
    app, events = make_app(workspace, allow_all=False)     # bash would ask, were the model to run it
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.fill_prompt("!ls")
        await pilot.pause()
        assert "shell mode" in str(app.prompt_input.border_subtitle)
        await type_and_send(app, pilot, "!printf 'hello [red]x[/red] \\033[2J\\n'; ls src; echo oops >&2")
        await pilot.pause()
        assert not isinstance(app.screen, PermissionScreen), "the user's own command is not asked about"
        await wait_idle(app, pilot)
        record = app.conversation.records_of(ShellRecord)[-1]
        shown = app.conversation.text_of(record)
        # the output as written: markup is not parsed, the escape is made visible
        assert "hello [red]x[/red] ␛[2J" in shown and "app.py" in shown and "oops" in shown, shown
        assert "exit code 0" in shown and "\x1b" not in shown
        last = app.agent.entries[-1]
        assert last.role == "user" and shell_of(last) is not None
        assert last.text().startswith("<bash-input>printf") and "<bash-output>\nhello" in last.text()
        assert not [e for e in events if isinstance(e, ev.ModelCall)], "no model call for a shell command"
        # the next prompt sees it, and the history the engine judges stays valid
        await type_and_send(app, pilot, "what did that print?")
        await wait_idle(app, pilot)
        assert validate_history(project(app.agent.entries)) == []
        session = app.agent.session_id

    again, _ = make_app(workspace, resume=session)
    async with again.run_test(size=SIZE) as pilot:
        await pilot.pause()
        restored = again.conversation.records_of(ShellRecord)
        assert restored and "hello [red]x[/red]" in again.conversation.text_of(restored[0])
        assert any(shell_of(e) for e in again.agent.entries)


async def test_esc_cancels_a_running_command_and_adds_nothing(workspace):
    app, _ = make_app(workspace)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        before = len(app.agent.entries)
        await type_and_send(app, pilot, "!sleep 30")
        await until(pilot, lambda: app.busy and app.agent.busy, "the command to run")
        await pilot.pause(0.2)
        assert app.conversation.is_attached and app.prompt_input.is_attached    # the screen stays live
        await pilot.press("escape")
        await until(pilot, lambda: not app.busy, "the cancel", deadline=5)
        record = app.conversation.records_of(ShellRecord)[-1]
        assert record.cancelled and "cancelled" in app.conversation.text_of(record)
        assert len(app.agent.entries) == before


async def test_a_bare_bang_says_what_to_type(workspace):
    app, _ = make_app(workspace)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await type_and_send(app, pilot, "!  ")
        await pilot.pause()
        assert any("type a command after the !" in n.message for n in app._notifications)
        assert not app.conversation.records_of(ShellRecord)


def test_help_and_the_hint_name_shell_mode():
    assert "!command" in help_text().plain and "shell mode" in help_text().plain
    assert commands.hint("!git status") == commands.SHELL_HINT and commands.hint("git") == ""


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
def test_shell_output_snapshot(snap_compare, utc, size):
    app = CtxApp(FakeAgent(), clock=lambda: FIXED_TIME)

    async def run_before(pilot):
        await fill(app, "ok", pilot)
        record = await app.conversation.add_shell("git status --short")
        app.conversation.set_shell(record, " M app/tui/app.py\n?? notes [draft].txt\n\x1b[31mred\x1b[0m\nexit code 0")
        app.fill_prompt("!ls")
        app.conversation.scroll_end(animate=False)
        await settled(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)
