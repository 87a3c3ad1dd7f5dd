"""Issue 12, problem 7, through the real SDK against the fake server: resume after a cancelled turn
(mid-stream or mid-tool) rebuilds exactly the state the live session had."""
from __future__ import annotations

import asyncio

import pytest

from agent_core import events as ev
from compaction import project, validate_history
from tests.fake_anthropic import FakeAnthropic, echo_responder, is_summary_request, reply, tool_use

from tests.agent_helpers import collect, fake_agent, make_workspace, of

WINDOW = 12_000


def _collapsing_then_slow(ws, mode: str):
    """Tool rounds over 3.5 KB files until collapse commits; the first request that carries a
    collapsed span is answered slowly (`stream`) or with a long tool batch (`tool`), to be cancelled."""
    for i in range(12):
        (ws / f"big{i}.txt").write_text(f"line {i}\n" * 500)
    n = {"i": 0, "slow": None}

    def responder(body):
        if is_summary_request(body):
            return echo_responder(body)
        if n["slow"] is None and "[collapsed" in str(body["messages"]):
            n["slow"] = len(body["messages"])
            if mode == "stream":
                return reply("word " * 400, chunk=5, delay=0.01)
            return reply("running", tool_use("bash", {"command": "sleep 5"}),
                         tool_use("read_file", {"path": "README.md"}))
        n["i"] += 1
        i = n["i"]
        if i % 2 == 0:
            return reply(f"Done {i}: " + "details " * 40)
        return reply(f"step {i}: " + "reasoning " * 100, tool_use("bash", {"command": f"cat big{i % 12}.txt"}))
    return responder, n


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["stream", "tool"])
async def test_continue_after_a_cancel_shows_the_count_the_live_session_had(tmp_path, mode):
    ws = make_workspace(tmp_path)
    responder, n = _collapsing_then_slow(ws, mode)
    with FakeAnthropic(responder=responder) as fake:
        agent = fake_agent(ws, fake.base_url, allow=["bash"], context_window=WINDOW)
        # the token-only rules, so collapse commits on a warm cache: this test is about what resume
        # rebuilds after a cancel, not about when a rewrite pays (tests/compaction/test_cache_economics.py)
        agent.pipeline.config.cache_aware = False
        for k in range(30):
            seen = []
            async for e in agent.run(f"prompt {k}"):
                seen.append(e)
                if mode == "stream" and [d.text for d in of(seen, ev.TextDelta)][-3:] == ["word "] * 3:
                    agent.cancel()
                if mode == "tool" and isinstance(e, ev.ToolResult) and n["slow"] is not None:
                    agent.cancel()
            if n["slow"] is not None:
                break
        assert seen[-1].stop_reason == "cancelled", of(seen, ev.Error)
        assert agent.pipeline.state.of("collapse").get("spans")
        if mode == "stream":
            assert agent.entries[-1].meta.get("cancelled")
        else:
            assert any("Cancelled" in str(b.get("content")) for b in agent.entries[-1].content)
        # the figure the user saw last, after the cancel, is the figure of the repaired history
        live = of(seen, ev.ContextUpdate)[-1]
        assert seen.index(live) > max(i for i, e in enumerate(seen) if isinstance(e, (ev.TextDelta, ev.ToolResult)))
        # a count confirmation still on its way (after a compaction, real API) may move it once more
        confirming = agent.counter.confirmation
        if confirming is not None and not confirming.done():
            await asyncio.gather(confirming, return_exceptions=True)
        else:
            assert agent.context_event() == live
        before = agent.context_event()          # what the pane shows when the user quits
        await agent.aclose()

        again = fake_agent(ws, fake.base_url, allow=["bash"], context_window=WINDOW, continue_=True)
        assert again.pipeline.state.to_dict()["layers"] == agent.pipeline.state.to_dict()["layers"]
        assert again.context_event() == before
        events = await collect(again.run("go on"))
        assert events[-1].stop_reason == "end_turn", of(events, ev.Error)
        assert validate_history(project(again.entries)) == []
        await again.aclose()
    assert all(r.status == 200 for r in fake.requests)


async def test_a_cancel_before_the_turn_starts_still_ends_it(tmp_path):
    """Esc (or an ACP session/cancel) right after the prompt: the turn's task is cancelled before
    its first step; the stream must end at once, not wait for a `finally` that never ran."""
    ws = make_workspace(tmp_path)
    with FakeAnthropic([reply("never sent")] * 3) as fake:
        agent = fake_agent(ws, fake.base_url)
        for _ in range(5):
            stream = agent.run("hello")
            first = asyncio.ensure_future(stream.__anext__())
            await asyncio.sleep(0)          # the turn's task exists and has not started
            assert agent.busy
            agent.cancel()
            try:
                await asyncio.wait_for(first, 5)
            except StopAsyncIteration:
                pass
            async for _ in stream:
                pass
            assert not agent.busy
        await agent.aclose()
