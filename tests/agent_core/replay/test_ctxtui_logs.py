"""Replaying ctxtui's own session logs (issue 24): the prompts after a logged compaction, the
tool-result text, the session's own window, and the cache validation, on a log the real loop
wrote through the SDK against the fake server at a 20k window."""
from __future__ import annotations

import asyncio
import json

import pytest

from agent_core.logs.trajectory_read import read_trajectories
from agent_core.replay.options import make_options
from agent_core.replay.references import user_prompts
from agent_core.replay.runner import run_replay
from tests.agent_helpers import collect, fake_agent, heavy_tool_session, make_workspace
from tests.fake_anthropic import FakeAnthropic

PROMPTS = 8


@pytest.fixture(scope="module")
def ctxtui_log(tmp_path_factory):
    """Every cheap layer acts (the token-only rules, as in test_agent_loop's long session): tool
    results persisted, old ones cleared, spans collapsed."""
    root = tmp_path_factory.mktemp("ctxtui-log")
    ws = make_workspace(root)

    async def run():
        with FakeAnthropic(responder=heavy_tool_session(ws), context_window=20_000) as fake:
            agent = fake_agent(ws, fake.base_url, allow=["bash", "grep"], context_window=20_000, home=str(root / "h"))
            agent.pipeline.config.cache_aware = False
            for k in range(PROMPTS):
                await collect(agent.run(f"prompt {k}: look at the big files"))
            await agent.aclose()
        return agent.session.path
    return asyncio.run(run())


def layers_logged(path) -> set[str]:
    events = [json.loads(line).get("event") or {} for line in path.read_text().splitlines()]
    return {e.get("layer") for e in events if e.get("type") == "compaction"}


def test_the_log_holds_rewrites_and_a_collapse(ctxtui_log):
    assert {"tool_result_budget", "microcompact", "collapse"} <= layers_logged(ctxtui_log)


def test_every_prompt_is_replayed_after_logged_compactions(ctxtui_log):
    (t,) = read_trajectories(ctxtui_log)
    assert [p.text for p in user_prompts(t)] == [f"prompt {k}: look at the big files" for k in range(PROMPTS)]
    report = run_replay(make_options([str(ctxtui_log)])).to_json()
    none = report["sessions"][0]["policies"]["none"]
    assert none["user_messages_total"] == none["user_messages_kept"] == PROMPTS


def test_tool_results_carry_their_text(ctxtui_log):
    (t,) = read_trajectories(ctxtui_log)
    results = [m for r in t.requests for m in r.added if m.kind == "tool_result"]
    assert results and all(m.text for m in results)
    assert any("line 1" in m.text for m in results)           # what `cat big1.txt` printed


def test_the_session_is_replayed_at_its_own_window(ctxtui_log):
    s = run_replay(make_options([str(ctxtui_log)])).to_json()["sessions"][0]
    assert s["window"] == 20_000
    assert s["policies"]["cc"]["compactions"].get("autocompact", 0) >= 1     # cc compacts in 20k
    assert s["policies"]["none"]["overflows"] > 0
    assert run_replay(make_options([str(ctxtui_log)], window=60_000)).to_json()["sessions"][0]["window"] == 60_000


def test_the_validation_reproduces_the_log(ctxtui_log):
    """Measured on this log: read 0.06%, write 0.04% (before: 15% / 28%; on ten prompts 27% / 44%)."""
    v = run_replay(make_options([str(ctxtui_log)])).to_json()["sessions"][0]["validation"]
    assert v["cache_read_error_pct"] < 1.0 and v["cache_write_error_pct"] < 1.0, v
    assert v["misses"] == []
