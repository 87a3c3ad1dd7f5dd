"""/rewind in the TUI (issue 28): a picker of the working history's prompts, newest first; the
chosen one returns to the input and the conversation is as it was before it; hostile prompt text
is shown, not obeyed (snapshots at 80×24 and 120×40)."""
from __future__ import annotations

import pytest

from agent_core.loop.rewind import RewindPoint
from app.tui.app import CtxApp
from app.tui.launch import build_app
from app.tui.screens.rewind import RewindScreen
from app.tui.widgets.conversation.notice_message import NoticeRecord
from tests.agent_helpers import make_workspace, user_dirs
from tests.app.snapshot_helpers import fill, settled
from tests.pilot_until import until
from tests.tui_fakes import FIXED_TIME, FakeAgent

POINTS = [RewindPoint(0, 1, "Explore the project and summarise it", 12),
          RewindPoint(12, 2, "now \x1b[2Jclear the screen\x07 and rename util.py to helpers.py", 7),
          RewindPoint(19, 3, "run the tests " * 12, 2)]


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
def test_rewind_picker_snapshot(snap_compare, utc, size):
    app = CtxApp(FakeAgent(), clock=lambda: FIXED_TIME)

    async def run_before(pilot):
        await fill(app, "ok", pilot)
        app.push_screen(RewindScreen(POINTS))
        await settled(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


async def test_rewind_puts_the_prompt_back_and_cuts_the_conversation(tmp_path):
    ws = make_workspace(tmp_path)
    app = build_app({"model": "demo", "allow": "all"}, environ=user_dirs(), workspace=ws, claude_root=None)
    async with app.run_test(size=(120, 40)) as pilot:
        for i, text in enumerate(("find main", "now look for helper")):
            app.run_prompt(text)
            await until(pilot, lambda i=i: app.agent.turns > i and not app.busy, "the turn", 30)
        app.run_slash("/rewind")
        await until(pilot, lambda: isinstance(app.screen, RewindScreen), "the picker")
        await pilot.press("down", "enter")            # newest first: down is the older prompt
        await until(pilot, lambda: app.prompt_input.text == "find main", "the prompt back in the input")
        assert app.agent.entries == [] and app.agent.rewind_points() == []
        notices = [app.conversation.text_of(n) for n in app.conversation.records_of(NoticeRecord)]
        assert any("Rewound" in n for n in notices)


async def test_escape_leaves_everything_as_it_was(tmp_path):
    ws = make_workspace(tmp_path)
    app = build_app({"model": "demo", "allow": "all"}, environ=user_dirs(), workspace=ws, claude_root=None)
    async with app.run_test(size=(80, 24)) as pilot:
        app.run_prompt("find main")
        await until(pilot, lambda: app.agent.turns == 1 and not app.busy, "the turn", 30)
        before = list(app.agent.entries)
        app.run_slash("/rewind")
        await until(pilot, lambda: isinstance(app.screen, RewindScreen), "the picker")
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, RewindScreen), "the picker closed")
        assert app.agent.entries == before and app.prompt_input.text == ""
