"""A usage figure no real window comes near (an attacker review): an answer reporting 10^30 input
tokens drove the context to "blocking" during the run, billed 3e24 dollars and made the next turn
compact. Negative and NaN figures counted 0 silently, so the context looked empty. Through the real
SDK against the fake server: such a usage is said ("usage not believable: N tokens"), counts
nothing, the context figure is estimated instead, and the session goes on."""
from __future__ import annotations

import math

import pytest

from agent_core import events as ev
from agent_core.providers.anthropic_client import MAX_BELIEVABLE_TOKENS, usage_to_dict
from tests.agent_helpers import collect, fake_agent, make_workspace, of
from tests.fake_anthropic import FakeAnthropic, reply

NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize("usage, shown", [
    ({"input_tokens": 10**30}, "1,000,000,000,000,000,000,000,000,000,000"),
    ({"cache_read_input_tokens": 1e30}, "1e+30"),
    ({"input_tokens": -5}, "-5"),
    ({"output_tokens": NAN}, "nan"),
    ({"cache_creation_input_tokens": INF}, "inf"),
], ids=["10**30", "1e30 float", "negative", "nan", "infinity"])
async def test_an_unbelievable_usage_is_said_and_drives_nothing(tmp_path, usage, shown):
    ws = make_workspace(tmp_path)
    with FakeAnthropic([reply("first", usage=usage), reply("second")]) as fake:
        agent = fake_agent(ws, fake.base_url)
        events = await collect(agent.run("hi"))
        later = await collect(agent.run("go on"))
        sent = len(fake.message_requests)
        await agent.aclose()
    said = [e.message for e in of(events, ev.Notice) if "not believable" in e.message]
    assert len(said) == 1 and said[0].startswith(f"usage not believable: {shown} tokens")
    contexts = of(events + later, ev.ContextUpdate)
    assert contexts and all(c.state == "ok" and c.tokens < 100_000 for c in contexts)
    before, after = contexts[0], of(events, ev.ContextUpdate)[-1]
    assert after.tokens >= before.tokens and after.source == "estimate"   # not anchored on a zeroed usage
    assert sent == 2 and not of(events + later, ev.Compaction) and not of(events + later, ev.Error)
    assert math.isfinite(agent.cost.total_usd) and agent.cost.total_usd < 1
    assert later[-1].stop_reason == "end_turn"


def test_a_believable_usage_is_read_as_it_was():
    u = usage_to_dict({"input_tokens": MAX_BELIEVABLE_TOKENS, "output_tokens": 2, "cache_read_input_tokens": None})
    assert u["input_tokens"] == MAX_BELIEVABLE_TOKENS and "not_believable" not in u
    odd = usage_to_dict({"input_tokens": MAX_BELIEVABLE_TOKENS + 1, "output_tokens": 2})
    assert odd["input_tokens"] == odd["output_tokens"] == 0 and odd["not_believable"].startswith(
        f"usage not believable: {MAX_BELIEVABLE_TOKENS + 1:,} tokens")
