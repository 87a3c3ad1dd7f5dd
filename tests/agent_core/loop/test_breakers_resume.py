"""Issue 12, problem 6: a resumed session starts with the breakers reset; the trip stays in the log."""
from __future__ import annotations

from agent_core.loop.compaction_events import report_events

from tests.fake_anthropic import FakeAnthropic, echo_responder

from tests.agent_helpers import collect, fake_agent, make_workspace


async def test_continue_starts_with_the_breakers_reset_and_the_trip_stays_in_the_log(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic(responder=echo_responder) as fake:
        agent = fake_agent(ws, fake.base_url)
        await collect(agent.run("hello"))
        breakers = agent.pipeline.breakers()
        for _ in range(3):
            trip = breakers.record_failure("the summary call failed", "auto", 100)
        assert trip is not None and agent.pipeline.auto_compact_stopped()
        for said in report_events([trip], agent.pipeline):   # logged as the loop logs a trip
            agent.log.event(said.to_dict())
        await agent.aclose()
        again = fake_agent(ws, fake.base_url, continue_=True)
        assert again.pipeline.auto_compact_stopped() is None
        assert again.pipeline.state.of("breakers")["failures"] == 0
        assert any(e.get("type") == "breaker" for e in again.session.loaded.events)
        await again.aclose()
