"""/cost's API time: each model call carries its duration (main and summary calls), the agent adds
them up, and a resumed session starts from what its log recorded."""
from __future__ import annotations

import json

from agent_core import events as ev
from tests.agent_helpers import collect, fake_agent, make_workspace, of
from tests.fake_anthropic import FakeAnthropic, echo_responder, is_summary_request, reply


def responder(body):
    if is_summary_request(body):
        return echo_responder(body)
    return reply("noted: " + "words " * 600, chunk=400, delay=0.005)


def logged_calls(agent) -> list[dict]:
    lines = agent.session.path.read_text().splitlines()
    events = [r["event"] for r in map(json.loads, lines) if r.get("t") == "event"]
    return [e for e in events if e.get("type") == "model_call"]


async def test_api_time_adds_up_every_call_and_survives_resume(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic(responder=responder) as fake:
        agent = fake_agent(ws, fake.base_url)
        for p in ("one", "two"):
            await collect(agent.run(p))
        events = await collect(agent.compact(None))
        assert of(events, ev.CompactionEnded)      # the summary call was made
        calls = logged_calls(agent)
        assert [c["purpose"] for c in calls] == ["main", "main", "compaction"]
        assert all(c["duration_s"] > 0 for c in calls)
        total = agent.api_seconds()
        assert abs(total - sum(c["duration_s"] for c in calls)) < 1e-6
        sid = agent.session_id
        await agent.aclose()
        again = fake_agent(ws, fake.base_url, resume=sid)
        assert abs(again.api_seconds() - total) < 1e-6
        await collect(again.run("three"))
        assert again.api_seconds() > total
        await again.aclose()
