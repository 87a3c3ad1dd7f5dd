"""/wait in the TUI: on the demo, time passes and the next turn shows what a cold cache allows;
on a real model the command is refused and the clock does not move."""
from __future__ import annotations

from pathlib import Path

import pytest

from agent_core import events as ev
from agent_core.providers.demo.tour import TOUR
from app.tui.launch import build_app
from app.tui.widgets.conversation.compaction_marker import MarkerRecord
from app.tui.widgets.conversation.notice_message import NoticeRecord
from compaction import clock

from tests.agent_helpers import SECRET, make_workspace, record_events, user_dirs
from tests.app.tui_helpers import prompt as send
from tests.demo_project import build, fixed_place

ROOT = Path(__file__).resolve().parents[2]
SIZE = (160, 40)


def notices(app) -> list[str]:
    """Every notice of the conversation: those paged out (kept as records) and those on screen."""
    return [r.text for r in app.conversation.walk_records() if isinstance(r, NoticeRecord)]


def marker_text(app, marker: MarkerRecord) -> str:
    """What a marker shows: its lines as drawn (a paged-out one as it would be drawn again)."""
    return " ".join(app.conversation.text_of(marker).split())   # a phrase wrapped over two lines reads whole


@pytest.mark.slow
async def test_wait_on_the_demo_lets_the_cache_expire_and_microcompact_clears(tmp_path):
    app = build_app({"model": "demo", "allow": ["all"]}, environ=user_dirs(), workspace=build(tmp_path),
                    claude_root=None)
    events = record_events(app.agent)
    async with app.run_test(size=SIZE) as pilot:
        await send(app, pilot, "explore this repository")
        assert not [e for e in events if isinstance(e, ev.Compaction) and e.layer == "microcompact"]
        await send(app, pilot, "/wait")                      # typed like any command
        said = [n for n in notices(app) if "pass on the demo's clock" in n]
        assert said and "6m" in said[-1] and "has expired" in said[-1], notices(app)
        assert clock.skipped() == 360
        await send(app, pilot, "what does the agent loop do?")
        micro = [e for e in events if isinstance(e, ev.Compaction) and e.layer == "microcompact"]
        assert micro and micro[0].cache["reason"] == "cold"
        markers = [m for m in app.conversation.records_of(MarkerRecord) if m.layer == "microcompact"]
        assert markers and "cache cold" in marker_text(app, markers[0])
        rows = [" ".join(str(c) for c in app.timeline.get_row_at(i)) for i in range(app.timeline.row_count)]
        assert any("micro" in r for r in rows), rows


async def test_wait_refuses_on_a_real_model_and_a_bad_duration(tmp_path, fake_base_url):
    env = {**user_dirs(), "ANTHROPIC_API_KEY": SECRET, "ANTHROPIC_BASE_URL": fake_base_url}
    app = build_app({"model": "claude-sonnet-4-6"}, environ=env, workspace=make_workspace(tmp_path), claude_root=None)
    async with app.run_test(size=SIZE) as pilot:
        app.run_slash("/wait 6m")
        await pilot.pause()
        msgs = [n.message for n in app._notifications]
        assert any("only the demo model's clock" in m for m in msgs), msgs
        assert clock.skipped() == 0.0
        assert not [n for n in notices(app) if "pass on the demo's clock" in n]


async def test_wait_with_a_bad_duration_says_what_to_type():
    app = build_app({"model": "demo"}, environ=user_dirs(), workspace=ROOT, claude_root=None)
    async with app.run_test(size=SIZE) as pilot:
        app.run_slash("/wait soon")
        await pilot.pause()
        msgs = [n.message for n in app._notifications]
        assert any("not a duration" in m and "6m" in m for m in msgs), msgs
        assert clock.skipped() == 0.0


@pytest.mark.slow
async def test_the_tour_typed_into_the_tui():
    """The tour, typed step by step into the app on the demo model (over the fixed project the tour
    tests use): the timeline lists each default layer, /wait is answered in the conversation and
    the cold cache shows on microcompact's marker, and the gauge went through warning, error and
    auto-compact without blocking — the promises of the tour, kept on screen."""
    with fixed_place() as (ws, env):
        app = build_app({"model": "demo", "allow": ["all"]}, environ=env, workspace=ws, claude_root=None)
        events = record_events(app.agent)
        async with app.run_test(size=SIZE) as pilot:
            for step in TOUR:
                await send(app, pilot, step)
                assert app.status.state != "blocking", step
            states = {e.state for e in events if isinstance(e, ev.ContextUpdate)}
            assert {"warning", "error", "autocompact"} <= states and "blocking" not in states, states
            tl = app.timeline
            shown = " ".join(str(tl.get_row_at(i)[1]) for i in range(tl.row_count))
            for name in ("result budget", "session memory", "microcompact", "autocompact"):
                assert name in shown, (name, shown)
            assert any("pass on the demo's clock" in n for n in notices(app))
            micro = [r for r in app.conversation.walk_records()       # paged out ones too
                     if isinstance(r, MarkerRecord) and r.layer == "microcompact"]
            assert micro and "cache cold" in marker_text(app, micro[0])
            assert not [e for e in events if isinstance(e, ev.Error)]
