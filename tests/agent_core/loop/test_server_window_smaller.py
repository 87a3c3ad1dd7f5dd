"""Issue 21, case 7 (window part): when the server's window is smaller than the client's, the one
retry after prompt-too-long was still too long (25,158 tokens for a 20,000 limit). Through the real
SDK against the fake server with --context-window larger than the fake server's window: the
numbers of the refusal size the compaction, the retry fits, and the session keeps the server's
window (no refusal on every later turn, and none after a resume)."""
from __future__ import annotations

import pytest

from agent_core import events as ev
from compaction import ContextBudget, project, validate_history
from tests.agent_helpers import collect, fake_agent, make_workspace, of
from tests.fake_anthropic import FakeAnthropic, count_input, echo_responder, is_summary_request, prompt_too_long, reply

SERVER_WINDOW = 20_000
CLIENT_WINDOW = 200_000


def _responder(body):
    if is_summary_request(body):
        return echo_responder(body)
    return reply("noted: " + "detail " * 600)


async def _grow(agent, above: int) -> int:
    """Ordinary turns until the context is above `above` tokens; returns how many were run."""
    for k in range(40):
        events = await collect(agent.run(f"step {k} " + "please " * 300))
        assert events[-1].stop_reason == "end_turn", [e.message for e in of(events, ev.Error)]
        if of(events, ev.ContextUpdate)[-1].tokens > above:
            return k + 1
    raise AssertionError("the context never grew")


def _big_prompt(words: int) -> str:
    return "a long request: " + " ".join(f"w{i}" for i in range(words))


def _fits(body: dict, window: int = SERVER_WINDOW) -> bool:
    return count_input(body) + body["max_tokens"] <= window


async def test_the_retry_after_prompt_too_long_fits_a_smaller_server_window(tmp_path):
    """The issue's case: about 14,000 tokens of history, then a long request: the server refuses
    about 27,000 tokens against its 20,000; the compaction keeps what fits 20,000 (before, it kept
    what fits 200,000 and the retry was refused again: 23,265 > 20,000)."""
    ws = make_workspace(tmp_path)
    with FakeAnthropic(responder=_responder, context_window=SERVER_WINDOW) as fake:
        agent = fake_agent(ws, fake.base_url, context_window=CLIENT_WINDOW, max_output_tokens=2_000)
        await _grow(agent, 14_000)
        first, first_record = len(fake.message_requests), len(fake.requests)
        events = await collect(agent.run(_big_prompt(9_000)))
        turn = [r for r in fake.requests[first_record:] if r.path == "/v1/messages"]
        assert not of(events, ev.Error), [e.message for e in of(events, ev.Error)]
        assert events[-1].stop_reason == "end_turn"
        main = [b for b in fake.message_requests[first:] if not is_summary_request(b)]
        refused, retry = main[0], main[-1]
        assert count_input(refused) > SERVER_WINDOW and len(main) == 2       # one refusal, one retry
        assert _fits(retry) and count_input(retry) < 0.9 * SERVER_WINDOW
        assert turn[0].served == "prompt_too_long" and "tokens > 20000 maximum" in turn[0].error
        assert turn[-1].status == 200
        (comp,) = [c for c in of(events, ev.Compaction) if c.trigger == "reactive"]
        assert comp.tokens_after < 0.9 * SERVER_WINDOW
        notices = [e.message for e in of(events, ev.Notice)]
        assert any("20,000" in n and "rest of this session" in n for n in notices)
        assert of(events, ev.ContextUpdate)[-1].window == SERVER_WINDOW
        assert validate_history(project(agent.entries)) == []
        # The rest of the session works within 20,000: it compacts on its own, never refused again.
        later = len(fake.requests)
        await _grow(agent, 0)
        for k in range(6):
            events = await collect(agent.run(f"more {k} " + "please " * 300))
            assert events[-1].stop_reason == "end_turn" and not of(events, ev.Error)
        assert all(r.status == 200 for r in fake.requests[later:]), [r.error for r in fake.requests[later:]]
        assert all(_fits(b) for b in fake.message_requests[-7:])
        await agent.aclose()
        # A resumed session starts with the server's window.
        again = fake_agent(ws, fake.base_url, context_window=CLIENT_WINDOW, max_output_tokens=2_000, continue_=True)
        assert again.pipeline.config.budget.context_window == SERVER_WINDOW
        before = len(fake.requests)
        events = await collect(again.run("and now?"))
        assert events[-1].stop_reason == "end_turn"
        assert all(r.status == 200 for r in fake.requests[before:])
        await again.aclose()


async def test_a_server_that_counts_more_than_the_estimate_gets_a_retry_that_fits_its_count(tmp_path):
    """"prompt is too long: 26000 tokens > 20000 maximum" for a request estimated at about 18,000
    (a long request on a short history): the compaction aims below 20,000 by that ratio, so the
    retry fits once the server counts it. Sized for the window alone, the notes and the long
    request (about 15,000 estimated) would be counted near 21,700 and refused again."""
    ws = make_workspace(tmp_path)
    with FakeAnthropic(responder=_responder) as fake:
        agent = fake_agent(ws, fake.base_url, context_window=CLIENT_WINDOW, max_output_tokens=2_000)
        await _grow(agent, 7_000)
        first = len(fake.message_requests)
        fake.push(prompt_too_long(26_000, SERVER_WINDOW))
        events = await collect(agent.run(_big_prompt(7_000)))
        assert events[-1].stop_reason == "end_turn" and not of(events, ev.Error)
        main = [b for b in fake.message_requests[first:] if not is_summary_request(b)]
        refused, retry = main[0], main[-1]
        ratio = 26_000 / count_input(refused)              # the estimate and the fake count alike
        assert ratio > 1.3 and len(main) == 2
        assert count_input(retry) * ratio + retry["max_tokens"] <= SERVER_WINDOW
        assert agent.pipeline.config.budget.context_window == SERVER_WINDOW
        await agent.aclose()


async def test_a_smaller_window_named_by_max_tokens_refusals_is_adopted_once(tmp_path):
    """"input length and `max_tokens` exceed context limit: N + 64000 > 20000": before, every
    turn was sent twice (refused, then refitted); now only the first request is refused."""
    ws = make_workspace(tmp_path)
    with FakeAnthropic(responder=_responder, context_window=SERVER_WINDOW) as fake:
        agent = fake_agent(ws, fake.base_url, context_window=CLIENT_WINDOW)
        for k in range(8):
            events = await collect(agent.run(f"step {k} " + "please " * 300))
            assert events[-1].stop_reason == "end_turn", [e.message for e in of(events, ev.Error)]
        await agent.aclose()
    refused = [r for r in fake.requests if r.status != 200]
    assert len(refused) == 1 and refused[0].served == "max_tokens_over_window"
    assert agent.pipeline.config.budget.context_window == SERVER_WINDOW
    assert all(_fits(b) for b in fake.message_requests[1:])


async def test_the_server_engine_adopts_it_too(tmp_path):
    """--engine server: the server's compaction trigger moves down with the window. (A server
    window of 100,000: the API's compaction takes no trigger below 50,000, so the engine is only
    usable on a window whose threshold stays above it; answers of about 10,500 tokens fill it.)"""
    ws = make_workspace(tmp_path)
    server_window = 100_000

    def responder(body):
        return reply("noted: " + "detail " * 6_000, chunk=2_048)
    with FakeAnthropic(responder=responder, context_window=server_window) as fake:
        agent = fake_agent(ws, fake.base_url, context_window=CLIENT_WINDOW, engine="server")
        for k in range(10):
            events = await collect(agent.run(f"step {k} " + "please " * 300))
            assert events[-1].stop_reason == "end_turn", [e.message for e in of(events, ev.Error)]
        await agent.aclose()
    last = fake.message_requests[-1]["context_management"]["edits"][-1]
    assert last["type"] == "compact_20260112" and 50_000 <= last["trigger"]["value"] < server_window
    assert sum(r.status != 200 for r in fake.requests) == 1


def test_server_window_helpers():
    from agent_core.loop import server_window

    b = ContextBudget(context_window=200_000, max_output_tokens=64_000)
    assert server_window.smaller_budget(b, 250_000) is None and server_window.smaller_budget(b, 500) is None
    assert server_window.smaller_budget(b, 20_000).context_window == 20_000
    assert server_window.count_ratio(26_000, 20_000) == pytest.approx(1.3)
    assert server_window.count_ratio(10_000, 20_000) == 1.0 and server_window.count_ratio(10**9, 1) == 2.0
    assert server_window.fit_budget(b, 1.0) is b
    assert server_window.fit_budget(b, 2.0).context_window == 100_000
