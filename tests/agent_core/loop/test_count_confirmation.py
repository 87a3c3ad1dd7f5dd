"""After a compaction, with a real API, the count is confirmed with the free count_tokens endpoint
in the background and re-anchored; the ContextUpdate says whether its figure is estimated, from
a response's usage, or counted (issue 12). Through the real SDK against the fake server."""
from __future__ import annotations

import asyncio
import time

from agent_core import events as ev
from agent_core.loop.counting import HEAD_PROBE
from agent_core.sessions.session_reader import load_session
from compaction import project, validate_history
from tests.fake_anthropic import FakeAnthropic, count_input, echo_responder, is_summary_request, reply, tool_use

from tests.agent_helpers import collect, demo_agent, fake_agent, make_workspace, of


def wordy(body):
    """Long answers (so a summary is much smaller), the echo server's summary for summary calls."""
    return echo_responder(body) if is_summary_request(body) else reply("in detail: " + "findings " * 800)


def count_requests(fake: FakeAnthropic):
    """The confirmations counted (the head's count at session start left out)."""
    return [r for r in fake.requests if r.path == "/v1/messages/count_tokens" and r.body["messages"] != HEAD_PROBE]


async def grow(agent, n: int = 3) -> None:
    for k in range(n):
        events = await collect(agent.run(f"prompt {k}: " + "please look at this in detail " * 60))
        assert events[-1].stop_reason == "end_turn", of(events, ev.Error)


async def test_source_is_estimate_before_any_answer_then_usage(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic([reply("hello")]) as fake:
        agent = fake_agent(ws, fake.base_url)
        events = await collect(agent.run("hi"))
        await agent.aclose()
    ctx = of(events, ev.ContextUpdate)
    assert ctx[0].source == "estimate" and ctx[-1].source == "usage"
    assert not count_requests(fake)            # no compaction: nothing to confirm
    assert ev.ContextUpdate(1, 2, 1, "ok", 0.0).to_dict()["source"] == "estimate"


async def test_manual_compact_is_confirmed_by_count_tokens_in_the_background(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic(responder=wordy) as fake:
        agent = fake_agent(ws, fake.base_url)
        await grow(agent)
        fake.count_delay, fake.count_bias = 0.5, 37
        started = time.monotonic()
        events = await collect(agent.compact())
        took = time.monotonic() - started
        assert of(events, ev.Compaction), of(events, ev.Notice)
        after = of(events, ev.ContextUpdate)[-1]
        assert after.source == "estimate"
        task = agent.counter.confirmation
        assert task is not None and not task.done() and took < 0.5   # never on the hot path
        seen: list[ev.ContextUpdate] = []
        agent.on_context = seen.append
        await task
        (counted,) = count_requests(fake)
        exact = count_input(counted.body) + 37
        assert [c.source for c in seen] == ["counted"] and seen[0].tokens == exact
        now = agent.context_event()
        assert now.source == "counted" and now.tokens == exact
        assert agent.tokens() == exact   # the count the thresholds use, not only the figure shown
        # the next answer's usage takes over again
        events = await collect(agent.run("and now?"))
        assert of(events, ev.ContextUpdate)[0].source == "counted"
        assert of(events, ev.ContextUpdate)[-1].source == "usage"
        assert validate_history(project(agent.entries)) == []
        await agent.aclose()


async def test_a_confirmation_that_arrives_after_the_next_answer_is_dropped(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic(responder=wordy) as fake:
        agent = fake_agent(ws, fake.base_url)
        await grow(agent)
        fake.count_delay, fake.count_bias = 0.4, 500
        await collect(agent.compact())
        events = await collect(agent.run("next"))      # answered before the count comes back
        before = agent.context_event()
        await agent.counter.confirmation
        assert agent.context_event().tokens == before.tokens and agent.context_event().source == "usage"
        assert of(events, ev.ContextUpdate)[-1].source == "usage"
        await agent.aclose()


async def test_an_auto_compaction_in_a_turn_is_confirmed_and_survives_resume(tmp_path):
    ws = make_workspace(tmp_path)
    for i in range(6):
        (ws / f"big{i}.txt").write_text(f"row {i}\n" * 700)

    def responder(body):
        if len(body["messages"]) % 8 == 7:
            return reply("Done with this part.")
        return echo_responder(body) if "summary" in str(body.get("system", "")).lower() else reply(
            "reading: " + "notes " * 500, tool_use("bash", {"command": f"cat big{len(body['messages']) % 6}.txt"}))

    with FakeAnthropic(responder=responder) as fake:
        fake.count_bias = 11
        agent = fake_agent(ws, fake.base_url, allow=["bash"], context_window=20_000, disable_collapse=True)
        sources = []
        for k in range(6):
            events = await collect(agent.run(f"prompt {k}"))
            sources += [c.source for c in of(events, ev.ContextUpdate)]
            if agent.counter.confirmation is not None:
                await agent.counter.confirmation
        assert count_requests(fake), "no compaction was confirmed"
        assert {"estimate", "usage"} <= set(sources)
        live = agent.context_event()
        await agent.aclose()
        again = fake_agent(ws, fake.base_url, allow=["bash"], context_window=20_000, disable_collapse=True,
                           resume=agent.session_id)
        assert again.context_event().tokens == live.tokens
        await again.aclose()
    assert [e.uuid for e in load_session(agent.session.path).entries] == [e.uuid for e in agent.entries]


async def test_offline_demo_never_counts(tmp_path):
    ws = make_workspace(tmp_path)
    agent = demo_agent(ws)
    for k in range(3):
        await collect(agent.run(f"look around {k}"))
    await collect(agent.compact())
    assert agent.counter.confirmation is None
    await asyncio.sleep(0)
    await agent.aclose()
