"""Where the keys go around /cost, F2 and the modals (a user's report): with /cost filling the
screen the focus is on nothing (it was on the hidden conversation: typing was lost and Enter opened a
tool block), F2 puts the pane back with the prompt focused, the close is drawn within a frame or
two, and an Esc pressed while a modal or the maximized pane was still on screen never cancels the
running turn, however late the loop gets to it."""
from __future__ import annotations

import asyncio
import time

import pytest
from textual import events

from app.tui import esc_guard
from app.tui.app import CtxApp
from app.tui.screens.help import HelpScreen
from tests.pilot_until import until
from tests.tui_fakes import FIXED_TIME, FakeAgent


def tool_record(app: CtxApp, call_id: str):
    (tool,) = [r for r in app.conversation.messages if getattr(r, "call_id", None) == call_id]
    return tool


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
async def test_f2_with_the_cost_pane_filling_the_screen_gives_the_prompt_the_keys(size):
    app = CtxApp(FakeAgent(), clock=lambda: FIXED_TIME)
    async with app.run_test(size=size) as pilot:
        await app.conversation.add_tool_call("t1", "grep", {"pattern": "x"})
        await pilot.pause()
        app.run_slash("/cost")
        await until(pilot, lambda: app.screen.maximized is app.cost_pane, "/cost maximized")
        assert app.focused is not app.conversation     # hidden behind the pane: it must not take keys
        await pilot.press("enter")
        assert not tool_record(app, "t1").expanded
        await pilot.press("f2")
        await pilot.pause()
        assert app.screen.maximized is None and app.focused is app.prompt_input
        await pilot.press("h", "i")
        assert app.prompt_input.text == "hi"
        assert not tool_record(app, "t1").expanded


async def test_closing_the_cost_pane_is_drawn_within_a_few_frames():
    app = CtxApp(FakeAgent(), clock=lambda: FIXED_TIME)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        app.run_slash("/cost")
        await until(pilot, lambda: app.screen.maximized is app.cost_pane, "/cost maximized")
        await pilot.pause()
        started = time.monotonic()
        await pilot.press("escape")
        frames = 0
        while app.esc.restored_at in (float("inf"), float("-inf")):   # the restored screen not drawn yet
            frames += 1
            assert frames <= 5, "the restored screen was not drawn within 5 frames"
            await pilot.pause(1 / 60)
        assert app.screen.maximized is None and app.focused is app.prompt_input
        assert time.monotonic() - started < 5.0


def two_escapes(app: CtxApp) -> None:
    """Two Escs pressed together, before the app handles the first (a loaded machine)."""
    app.post_message(events.Key("escape", None))
    app.post_message(events.Key("escape", None))


@pytest.mark.parametrize("opener", ["/cost", "/help"])
async def test_an_esc_pressed_while_a_screen_was_showing_never_cancels_the_turn(monkeypatch, opener):
    monkeypatch.setattr(esc_guard, "ESC_AFTER_CLOSE_S", 0.0)   # no grace: only the press time protects
    gate = asyncio.Event()
    app = CtxApp(FakeAgent(gate=gate), clock=lambda: 0.0)
    async with app.run_test(size=(120, 40)) as pilot:
        app.run_prompt("a long turn")
        await until(pilot, lambda: app.busy, "the turn running")
        app.run_slash(opener)
        await until(pilot, lambda: app.screen.maximized is app.cost_pane or isinstance(app.screen, HelpScreen),
                    f"{opener} open")
        await pilot.pause()
        two_escapes(app)
        await until(pilot, lambda: len(app.screen_stack) == 1 and app.screen.maximized is None, "closed")
        await pilot.pause()
        assert app.busy and not app.agent._cancelled
        await until(pilot, lambda: app.esc.restored_at != float("inf"), "the main screen drawn")
        await pilot.press("escape")       # pressed after the close was drawn: it cancels
        assert app.agent._cancelled
        gate.set()
