"""Issue 13 §1 through the real SDK against the fake server: the cache TTL setting reaches the API,
the summary call shares the main call's prefix (and so reads the conversation from the cache), and
a summary answer that calls a tool is a failed attempt that keeps the history."""
from __future__ import annotations

import pytest

from agent_core import events as ev
from compaction import validate_history
from compaction.summary_prompt import build_summary_prompt
from tests.fake_anthropic import FakeAnthropic, echo_responder, is_summary_request, reply, tool_use

from agent_core.config import load_config
from agent_core.loop.factory import build_agent
from agent_core.loop.summarizer_adapter import summary_floor
from agent_core.pricing.pricer import Pricer
from tests.agent_core.loop.instruction_helpers import INSTRUCTIONS, instruction_session
from tests.agent_helpers import MODEL, SECRET, collect, fake_agent, make_workspace, of, user_dirs


def _markers(body: dict) -> list[dict]:
    """Every cache_control marker of a request, in the API's order."""
    out: list[dict] = []

    def walk(x):
        if isinstance(x, dict):
            if "cache_control" in x:
                out.append(x["cache_control"])
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
    for part in ("tools", "system", "messages"):
        walk(body.get(part))
    return out


def _usage_of(fake: FakeAnthropic) -> list[dict]:
    return [r.usage for r in fake.requests if r.path == "/v1/messages" and r.usage is not None]


def _agent_with_env(ws, base_url: str, **env: str):
    environ = {**user_dirs(), "ANTHROPIC_API_KEY": SECRET, "ANTHROPIC_BASE_URL": base_url, **env}
    return build_agent(load_config({"model": MODEL, "context_window": 60_000}, environ=environ, workspace=ws))


async def test_cache_ttl_1h_is_asked_for_and_billed_as_1h_writes(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic(responder=echo_responder) as fake:
        agent = _agent_with_env(ws, fake.base_url, CTXTUI_CACHE_TTL="1h")
        assert agent.pipeline.config.cache_ttl == "1h"
        await collect(agent.run("first question " * 100))
        await collect(agent.run("second question"))
        await agent.aclose()
    bodies = fake.message_requests
    assert bodies and all(_markers(b) and all(m == {"type": "ephemeral", "ttl": "1h"} for m in _markers(b))
                          for b in bodies)
    usages = _usage_of(fake)
    first = usages[0]["cache_creation"]
    assert first["ephemeral_1h_input_tokens"] == usages[0]["cache_creation_input_tokens"] > 0
    assert first["ephemeral_5m_input_tokens"] == 0
    assert usages[1]["cache_read_input_tokens"] > 0       # the second call reads what the first wrote


async def test_cache_ttl_5m_sends_plain_ephemeral_markers(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic(responder=echo_responder) as fake:
        agent = fake_agent(ws, fake.base_url, context_window=60_000)
        assert agent.pipeline.config.cache_ttl == "5m"
        await collect(agent.run("a question " * 100))
        await agent.aclose()
    assert all(m == {"type": "ephemeral"} for b in fake.message_requests for m in _markers(b))
    u = _usage_of(fake)[0]
    assert u["cache_creation"]["ephemeral_1h_input_tokens"] == 0 < u["cache_creation"]["ephemeral_5m_input_tokens"]


def test_the_engine_gets_the_models_rates(tmp_path):
    ws = make_workspace(tmp_path)
    agent = fake_agent(ws, "http://127.0.0.1:9", context_window=60_000)
    rates = Pricer().rates(agent.client.info.model)
    assert rates is not None
    assert agent.pipeline.config.cache_rates.input == rates["input"]
    assert agent.pipeline.config.cache_rates.cache_read == rates["cache_read"]


async def test_the_summary_call_shares_the_main_prefix_and_reads_it_from_the_cache(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic([reply("Reading it.", tool_use("read_file", {"path": "src/util.py"})),
                        reply("It doubles its input. " * 200)], responder=echo_responder) as fake:
        agent = fake_agent(ws, fake.base_url, context_window=60_000)
        await collect(agent.run("What does helper do in src/util.py? " * 20))
        n = len(fake.requests)
        events = await collect(agent.compact("keep the findings"))
        await agent.aclose()
    assert of(events, ev.Compaction) and not of(events, ev.Error)
    records = [r for r in fake.requests if r.path == "/v1/messages"]
    main_last = [r for r in fake.requests[:n] if r.path == "/v1/messages"][-1]
    summary = [r for r in fake.requests[n:] if r.path == "/v1/messages" and is_summary_request(r.body)]
    assert len(summary) == 1, [r.served for r in records]
    s, m = summary[0].body, main_last.body
    # the same system prompt, the same tools, no tool_choice of its own
    assert s["system"] == m["system"] and s["tools"] == m["tools"]
    assert "tool_choice" not in s and "tool_choice" not in m
    # the conversation as the main call sent it, then the summary prompt as the last user message
    strip = _without_markers
    assert strip(s["messages"][:len(m["messages"]) - 1]) == strip(m["messages"][:-1])
    last = s["messages"][-1]
    assert last["role"] == "user" and last["content"][-1]["text"] == build_summary_prompt("keep the findings")
    assert validate_history(strip(s["messages"])) == []
    # its usage: the conversation the main calls wrote is read from the cache
    u = summary[0].usage
    # (all of the last main request's cached prefix) and only what that request had not sent yet
    # (its answer) and the prompt are written
    cached_by_main = main_last.usage["cache_read_input_tokens"] + main_last.usage["cache_creation_input_tokens"]
    assert u["cache_read_input_tokens"] == cached_by_main > 0, (u, main_last.usage)
    assert u["cache_creation_input_tokens"] < u["cache_read_input_tokens"], u
    # and the cost pane books it under "compaction", reads included
    comp = agent.cost.purposes["compaction"]
    assert comp.requests == 1 and comp.tokens["cache_read"] == u["cache_read_input_tokens"]


def _without_markers(x):
    if isinstance(x, dict):
        return {k: _without_markers(v) for k, v in x.items() if k != "cache_control"}
    if isinstance(x, list):
        return [_without_markers(v) for v in x]
    return x


async def test_a_summary_answer_that_calls_a_tool_is_a_failed_attempt_and_the_history_is_kept(tmp_path):
    ws = make_workspace(tmp_path)

    def responder(body):
        if is_summary_request(body):
            return reply("Let me look first.", tool_use("read_file", {"path": "README.md"}))
        return echo_responder(body)

    with FakeAnthropic(responder=responder) as fake:
        agent = fake_agent(ws, fake.base_url, context_window=60_000)
        await collect(agent.run("Tell me about this project. " * 50))
        before = list(agent.entries)
        failures_before = agent.pipeline.state.of("breakers").get("failures", 0)
        events = await collect(agent.compact("the plan"))
        await agent.aclose()
    said = [e.message for e in of(events, ev.Error)]
    assert any("called a tool (read_file)" in m for m in said), said
    assert not of(events, ev.Compaction)
    assert [e.message for e in agent.entries] == [e.message for e in before]      # history kept
    assert agent.pipeline.state.of("breakers").get("failures", 0) == failures_before + 1
    assert agent.cost.purposes["compaction"].requests == 1                      # its cost is booked
    assert not [b for b in fake.message_requests if not is_summary_request(b)][1:]  # no tool was run after


def test_the_summary_floor_follows_the_window():
    assert summary_floor(200_000, 20_000) == 3_000
    assert summary_floor(60_000, 20_000) == 3_000
    assert summary_floor(20_000, 20_000) == 1_000
    assert summary_floor(60_000, 500) == 500


@pytest.mark.slow
async def test_at_a_small_window_every_summary_call_reads_the_conversation_from_the_cache(tmp_path):
    """Issue 12's 20,000-window run with LLM compaction alone: the summary requests fit without the
    prompt-too-long trim (which would drop the oldest rounds and so the whole cached prefix)."""
    ws = make_workspace(tmp_path)
    with FakeAnthropic(responder=instruction_session(ws, 20_000)) as fake:
        agent = fake_agent(ws, fake.base_url, context_window=20_000)
        cfg = agent.pipeline.config
        cfg.microcompact_enabled = cfg.time_based_enabled = cfg.snip_enabled = cfg.collapse_enabled = False
        agent.pipeline.stages = [s for s in agent.pipeline.stages if s.name == "autocompact"]
        for k in range(20):
            events = await collect(agent.run(INSTRUCTIONS[k]))
            assert events[-1].stop_reason == "end_turn", of(events, ev.Error)
        await agent.aclose()
    summaries = [r for r in fake.requests if r.path == "/v1/messages" and is_summary_request(r.body)]
    assert len(summaries) >= 2
    for r in summaries:
        assert "left out so that the summary request fits" not in str(r.body["messages"][0])
        u = r.usage
        assert u["cache_read_input_tokens"] > 5 * u["cache_creation_input_tokens"], u
