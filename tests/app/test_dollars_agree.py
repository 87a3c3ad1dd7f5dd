"""The TUI, `watch`, `usage` and `replay` agree to the cent on the same log (issue 24): one session
run in the real app through the SDK and the fake server, with tool calls and compactions, then the
log read by the reading commands' own code (replay's "as logged" figure)."""
from __future__ import annotations

import asyncio

import pytest

from agent_core.replay.options import ReplayOptions
from agent_core.replay.runner import run_replay
from agent_core.watch.state import WatchState
from app.cli.usage import build_report
from tests.agent_helpers import heavy_tool_session, make_workspace
from tests.app.tui_helpers import fake_app, prompt
from tests.fake_anthropic import FakeAnthropic


@pytest.mark.slow
async def test_the_tui_watch_and_usage_show_the_same_dollars_for_one_log(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic(responder=heavy_tool_session(ws)) as fake:
        app, _events = fake_app(ws, fake.base_url)
        async with app.run_test(size=(120, 40)) as pilot:
            for i in range(8):      # enough for an automatic compaction before the manual one (reads are
                await prompt(app, pilot, f"step {i}")      # unpadded and the early tail longer since issue 49)
            await prompt(app, pilot, "/compact")
            shown = app.status.cost_usd
            pane = app.cost_pane.cost.total_usd
            path = app.agent.session.path
            compactions = len(app.agent.compactions)
    assert compactions >= 2 and len(fake.message_requests) >= 10
    report = build_report([path])
    usage = sum(s.tally.cost_usd or 0 for s in report.sessions.values())
    watched = WatchState(path)
    watched.poll()
    (replayed,) = (await asyncio.to_thread(run_replay, ReplayOptions(paths=(path,)))).sessions   # its own loop
    assert shown == pane
    assert replayed.logged_cost_usd is not None and f"{replayed.logged_cost_usd:.2f}" == f"{shown:.2f}"
    assert replayed.logged_cost_usd == pytest.approx(shown, abs=1e-9)
    assert f"{shown:.2f}" == f"{usage:.2f}" == f"{watched.cost.total_usd:.2f}"
    assert shown == pytest.approx(usage, abs=1e-9) and shown == pytest.approx(watched.cost.total_usd, abs=1e-9)
