"""Issue 12, problem 8, through the real SDK against the fake server: tool definitions estimated as
the JSON they are sent as, `max_tokens` clamped so input + max_tokens fits the window, and the
API's "input length and `max_tokens` exceed context limit" treated as prompt-too-long."""
from __future__ import annotations

import json

import pytest

from agent_core import events as ev
from agent_core.context_budget import output_room
from agent_core.providers.anthropic_client import AnthropicClient
from agent_core.providers.errors import parse_max_tokens_over_window
from agent_core.providers.model import ModelError
from compaction import project, validate_history
from tests.fake_anthropic import FakeAnthropic, count_input, echo_responder, fault, is_summary_request, reply, tool_use

from tests.agent_helpers import collect, fake_agent, make_workspace, of

OVER = ("input length and `max_tokens` exceed context limit: {n} + {m} > {w}, decrease input length or "
        "`max_tokens` and try again")


async def test_first_count_matches_the_server_count_of_the_first_request(tmp_path):
    """Before any usage the count is system + tools + messages, estimated: with the tools read as
    `str(dict)` it was far above what the server counted (+59% on the tools)."""
    ws = make_workspace(tmp_path)
    with FakeAnthropic([reply("hello")]) as fake:
        agent = fake_agent(ws, fake.base_url)
        events = await collect(agent.run("hi"))
        await agent.aclose()
    first = of(events, ev.ContextUpdate)[0]          # the estimate, before the answer's usage
    served = count_input(fake.message_requests[0])
    assert abs(first.tokens - served) <= 0.01 * served, (first.tokens, served)
    assert first.categories["tools"] == count_input({"tools": fake.message_requests[0]["tools"]})


async def test_tool_definitions_are_estimated_near_an_independent_count(tmp_path):
    """Against a stand-in that counts the sent JSON at 3.5 characters a token (the issue's), the
    tool definitions were estimated 59% over on the first call (JSON-looking text at 2); now they
    count like a tool call's JSON input."""
    ws = make_workspace(tmp_path)
    with FakeAnthropic([reply("hello")]) as fake:
        agent = fake_agent(ws, fake.base_url)
        events = await collect(agent.run("hi"))
        await agent.aclose()
    tools = fake.message_requests[0]["tools"]
    sent = sum(len(json.dumps({k: v for k, v in t.items() if k != "cache_control"}, separators=(",", ":")))
               for t in tools)
    independent = sent / 3.5
    assert abs(of(events, ev.ContextUpdate)[0].categories["tools"] - independent) <= 0.2 * independent


async def test_main_calls_clamp_max_tokens_to_the_room_left(tmp_path):
    """A 20,000 window and a model whose max output is 64,000: every request (main and summary)
    fits input + max_tokens inside the window; the fake server refuses one that does not."""
    ws = make_workspace(tmp_path)
    for i in range(4):
        (ws / f"f{i}.txt").write_text(f"row {i} " * 500)
    n = {"i": 0}

    def responder(body):
        if is_summary_request(body):
            return echo_responder(body)
        n["i"] += 1
        if n["i"] % 3 == 0:
            return reply("done with that part")
        return reply("reading " * 50, tool_use("bash", {"command": f"cat f{n['i'] % 4}.txt"}))

    with FakeAnthropic(responder=responder, context_window=20_000) as fake:
        agent = fake_agent(ws, fake.base_url, allow=["bash"], context_window=20_000)
        for k in range(4):
            events = await collect(agent.run(f"prompt {k}"))
            assert events[-1].stop_reason == "end_turn", of(events, ev.Error)
            assert validate_history(project(agent.entries)) == []
        await agent.aclose()
    assert fake.requests and all(r.status == 200 for r in fake.requests), [r.error for r in fake.requests]
    bodies = fake.message_requests
    assert all(count_input(b) + b["max_tokens"] <= 20_000 for b in bodies)
    assert all(b["max_tokens"] < 64_000 for b in bodies)


async def test_max_tokens_stays_the_model_maximum_when_it_fits(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic([reply("hello")]) as fake:
        agent = fake_agent(ws, fake.base_url)
        await collect(agent.run("hi"))
        await agent.aclose()
    assert fake.message_requests[0]["max_tokens"] == agent.client.info.max_output_tokens == 64_000


async def test_the_fake_server_refuses_input_plus_max_tokens_over_its_window():
    with FakeAnthropic([reply("never")], context_window=5_000) as fake:
        client = AnthropicClient(api_key="k", base_url=fake.base_url, model="claude-sonnet-4-6", idle_timeout=10)
        with pytest.raises(ModelError) as e:
            async for _ in client.stream(system="be brief", messages=[{"role": "user", "content": "hi"}], tools=[],
                                         max_tokens=64_000):
                pass
        await client.aclose()
    sent = fake.requests[0].body
    assert e.value.kind == "prompt_too_long" and e.value.status == 400 and not e.value.retryable
    assert parse_max_tokens_over_window(e.value.message) == (count_input(sent), 64_000, 5_000)
    assert "/compact" in e.value.message
    assert fake.remaining == 1   # refused before the script was consumed


async def test_an_undercount_is_refitted_from_the_api_figures_without_compacting(tmp_path):
    """The estimate was low: the API names the real input; the call is sent again once with the
    room that is really left, and nothing is compacted."""
    ws = make_workspace(tmp_path)
    with FakeAnthropic([fault("bad_request", message=OVER.format(n=150_000, m=64_000, w=200_000)),
                        reply("fits now")]) as fake:
        agent = fake_agent(ws, fake.base_url)
        events = await collect(agent.run("hi"))
        await agent.aclose()
    assert events[-1].stop_reason == "end_turn", of(events, ev.Error)
    assert not of(events, ev.Compaction) and not of(events, ev.Error)
    first, second = fake.message_requests
    assert first["max_tokens"] == 64_000 and 49_000 <= second["max_tokens"] <= 50_000


async def test_over_the_window_with_max_tokens_compacts_reactively_when_no_room_is_left(tmp_path):
    """When the API says even the input leaves no room for an answer, it is prompt-too-long:
    one reactive compaction, then the call is sent again."""
    ws = make_workspace(tmp_path)
    with FakeAnthropic([reply("first " * 3000), fault("bad_request", message=OVER.format(n=199_000, m=64_000,
                                                                                       w=200_000))],
                       responder=echo_responder) as fake:
        agent = fake_agent(ws, fake.base_url)
        await collect(agent.run("one " * 50))
        events = await collect(agent.run("two"))
        await agent.aclose()
    comps = of(events, ev.Compaction)
    assert comps and comps[0].trigger == "reactive", of(events, ev.Error)
    assert events[-1].stop_reason == "end_turn"
    assert validate_history(project(agent.entries)) == []


def test_output_room():
    assert output_room(200_000, 64_000, 10_000) == 64_000
    assert output_room(200_000, 64_000, 150_000) == 50_000
    assert output_room(200_000, 64_000, 197_000) == 3_000
    assert output_room(200_000, 64_000, 197_001) is None
    assert output_room(20_000, 2_000, 18_500) is None           # 1,500 left, under the floor of 2,000
    assert output_room(20_000, 1_000, 19_500) is None          # the floor is at most the max output
    assert output_room(20_000, 1_000, 19_000) == 1_000
    assert output_room(20_000, 64_000, 18_000, floor=2_000) == 2_000
