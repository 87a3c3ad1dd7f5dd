"""Dollars after a crash (issue 24): a run killed mid-turn logged model calls its state does not
count yet; the resumed session books them, so it agrees with `usage`, `watch` and replay's "as
logged" figure on the same log."""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent_core.config import load_config
from agent_core.loop.factory import build_agent
from agent_core.logs.discover import latest_session
from agent_core.sessions.paths import project_state_dir, state_root
from agent_core.sessions.session_reader import load_session
from agent_core.replay.options import ReplayOptions
from agent_core.replay.runner import run_replay
from agent_core.watch.state import WatchState
from app.cli.usage import build_report
from tests.agent_helpers import MODEL, SECRET, make_workspace, user_dirs, wait_for
from tests.fake_anthropic import FakeAnthropic, reply, tool_use

ROOT = Path(__file__).resolve().parents[3]


def _calls_logged(ws: Path) -> int:
    info = latest_session(project_state_dir(state_root(), ws.resolve()))
    if info is None:
        return 0
    return sum(1 for line in info.path.read_bytes().splitlines() if b'"type":"model_call"' in line)


@pytest.mark.parametrize("calls_before_kill", [2, 3])
@pytest.mark.slow
def test_a_killed_turns_logged_calls_are_counted_on_resume(tmp_path, calls_before_kill):
    ws = make_workspace(tmp_path)
    script = [reply("step", tool_use("read_file", {"path": "README.md"})),
              reply("step2", tool_use("glob", {"pattern": "*"})),
              reply("step3", tool_use("glob", {"pattern": "*.md"})),
              reply("slow " * 400, chunk=4, delay=0.05)]
    with FakeAnthropic(script) as fake:
        env = {**user_dirs(), "ANTHROPIC_API_KEY": SECRET, "ANTHROPIC_BASE_URL": fake.base_url, "CTXTUI_MODEL": MODEL}
        full = {**{k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CTXTUI_"))}, **env}
        proc = subprocess.Popen([sys.executable, "-m", "app.cli", "--headless", "-p", "work", "--workspace", str(ws),
                                 "--allow", "all"], cwd=str(ROOT), env=full, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
        try:
            assert wait_for(lambda: _calls_logged(ws) >= calls_before_kill), proc.stderr.read() if proc.poll() else ""
            proc.kill()
            proc.wait(timeout=20)
        finally:
            if proc.poll() is None:
                proc.kill()
    path = latest_session(project_state_dir(state_root(), ws.resolve())).path
    logged = load_session(path)
    config = load_config({"model": MODEL}, environ=env, workspace=ws)
    agent = build_agent(config, continue_=True)
    try:
        resumed = agent.cost.total_usd
        calls = agent.cost.calls()
    finally:
        agent.session.close()
    report = build_report([path])
    usage_usd = sum(s.tally.cost_usd or 0 for s in report.sessions.values())
    watched = WatchState(path)
    watched.poll()
    (replayed,) = run_replay(ReplayOptions(paths=(path,))).sessions
    assert calls == _calls_logged(ws) >= calls_before_kill
    assert round(resumed, 2) == round(usage_usd, 2) == round(watched.cost.total_usd, 2)
    assert replayed.logged_cost_usd == pytest.approx(usage_usd, abs=1e-6)
    assert resumed == pytest.approx(usage_usd, abs=1e-6) and resumed == pytest.approx(watched.cost.total_usd, abs=1e-6)
    assert agent.api_seconds() > 0 and len(logged.calls_after_state) <= calls


def test_a_call_logged_after_the_last_state_line_is_booked_once(tmp_path):
    """The window a kill can fall in: `record_call` logs the call, the state that counts it is
    written later in the turn (after its tools, or after the summary it was for)."""
    ws = make_workspace(tmp_path)
    with FakeAnthropic([reply("ok")]) as fake:
        env = {**user_dirs(), "ANTHROPIC_API_KEY": SECRET, "ANTHROPIC_BASE_URL": fake.base_url, "CTXTUI_MODEL": MODEL}
        config = load_config({"model": MODEL}, environ=env, workspace=ws)
        async def one_turn():
            agent = build_agent(config)
            async for _ in agent.run("hi"):
                pass
            await agent.aclose()
            return agent
        first = asyncio.run(one_turn())
    path = first.session.path
    killed_call = {"type": "model_call", "message_id": "msg_killed", "model": MODEL, "purpose": "compaction",
                   "usage": {"input_tokens": 40_000, "output_tokens": 2_000, "cache_creation_input_tokens": 0,
                             "cache_read_input_tokens": 0}, "duration_s": 7.5}
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps({"t": "event", "at": time.time(), "event": killed_call}, separators=(",", ":")) + "\n")
    agent = build_agent(load_config({"model": MODEL}, environ=env, workspace=ws), continue_=True)
    try:
        resumed, calls, api_s = agent.cost.total_usd, agent.cost.calls(), agent.api_seconds()
    finally:
        agent.session.close()
    usage_usd = sum(s.tally.cost_usd or 0 for s in build_report([path]).sessions.values())
    watched = WatchState(path)
    watched.poll()
    assert calls == 2 and api_s >= 7.5
    assert resumed == pytest.approx(usage_usd, abs=1e-6) == pytest.approx(watched.cost.total_usd, abs=1e-6)
    assert resumed > first.cost.total_usd + 0.1        # 40,000 input tokens at $3/M
