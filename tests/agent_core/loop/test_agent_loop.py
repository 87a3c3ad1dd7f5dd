"""The loop through the real anthropic SDK against the loopback fake server."""
from __future__ import annotations

import json
import os

import pytest

from agent_core import events as ev
from agent_core.sessions.session_reader import load_session
from compaction import project, validate_history
from tests.fake_anthropic import (is_summary_request, FakeAnthropic, cut, echo_responder, malformed, overloaded,
                                  prompt_too_long, rate_limit, reply, server_error, tool_use)

from tests.agent_helpers import MODEL, SECRET, collect, fake_agent, heavy_tool_session, make_workspace, of


def session_file(agent):
    return agent.session.path


async def test_multi_turn_with_parallel_tool_calls(tmp_path):
    ws = make_workspace(tmp_path)
    script = [
        reply("Looking around.", tool_use("glob", {"pattern": "**/*.py"}),
              tool_use("read_file", {"path": "src/app.py"}), tool_use("grep", {"pattern": "helper"})),
        reply("Found **two** modules."),
        reply("Second turn answer."),
    ]
    with FakeAnthropic(script) as fake:
        agent = fake_agent(ws, fake.base_url)
        events = await collect(agent.run("what is here?"))
        calls = of(events, ev.ToolCall)
        results = of(events, ev.ToolResult)
        assert [c.name for c in calls] == ["glob", "read_file", "grep"]
        assert {r.id for r in results} == {c.id for c in calls}
        assert not any(r.is_error for r in results)
        assert "src/app.py" in next(r for r in results if r.name == "glob").preview
        assert isinstance(events[-1], ev.TurnFinished) and events[-1].stop_reason == "end_turn"
        assert "".join(e.text for e in of(events, ev.TextDelta)).endswith("Found **two** modules.")
        assert of(events, ev.CostUpdate)[-1].by_model[MODEL]["output"] > 0

        events2 = await collect(agent.run("and now?"))
        assert events2[-1].stop_reason == "end_turn"
        # every request was valid (the fake answers 400 otherwise) and carried cache breakpoints
        assert all(r.status == 200 for r in fake.requests)
        last = fake.message_requests[-1]
        assert "cache_control" in str(last["messages"][-1]) and "cache_control" in str(last["system"])
        assert validate_history(project(agent.entries)) == []
        await agent.aclose()

    ctx = of(events, ev.ContextUpdate)
    assert ctx[-1].tokens > ctx[0].tokens and ctx[-1].window == agent.pipeline.config.budget.context_window
    loaded = load_session(session_file(agent))
    assert [e.uuid for e in loaded.entries] == [e.uuid for e in agent.entries]


@pytest.mark.parametrize("fault", [rate_limit(), overloaded(), server_error(retry_after=0.01), cut(3), malformed(2)],
                         ids=["429", "529", "500", "cut", "malformed"])
async def test_a_transient_fault_is_retried(tmp_path, fault):
    ws = make_workspace(tmp_path)
    with FakeAnthropic([fault, reply("recovered")]) as fake:
        agent = fake_agent(ws, fake.base_url)
        events = await collect(agent.run("hi"))
        await agent.aclose()
    assert events[-1].stop_reason == "end_turn", events
    assert "recovered" in "".join(e.text for e in of(events, ev.TextDelta))
    assert len(fake.message_requests) >= 2
    # a status fault is retried by the SDK itself; a stream broken mid-way by the loop, said so
    assert bool(of(events, ev.StreamRetry)) == (fault.get("fault") in ("cut", "malformed"))


async def test_persistent_fault_ends_in_a_clear_error_and_a_resumable_session(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic([server_error(retry_after=0.01)] * 10) as fake:
        agent = fake_agent(ws, fake.base_url)
        events = await collect(agent.run("hi"))
        await agent.aclose()
        errors = of(events, ev.Error)
        assert errors and errors[-1].kind == "server" and "try again" in errors[-1].message.lower()
        assert events[-1].stop_reason == "error"
        fake.reset()
        fake.push(reply("back again"))
        again = fake_agent(ws, fake.base_url, resume=agent.session_id)
        assert [e.uuid for e in again.entries] == [e.uuid for e in agent.entries]
        events = await collect(again.run("retry please"))
        assert events[-1].stop_reason == "end_turn"
        assert validate_history(project(again.entries)) == []
        await again.aclose()


async def test_prompt_too_long_compacts_once_and_retries(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic([reply("first " * 3000), prompt_too_long(250_000, 200_000)],
                       responder=echo_responder) as fake:
        agent = fake_agent(ws, fake.base_url)
        await collect(agent.run("one " * 50))
        events = await collect(agent.run("two"))
        await agent.aclose()
    comps = of(events, ev.Compaction)
    assert comps and comps[0].trigger == "reactive"
    assert events[-1].stop_reason == "end_turn"
    assert validate_history(project(agent.entries)) == []


async def test_auth_error_is_not_retried_and_never_shows_the_key(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic(api_key="another-key") as fake:
        agent = fake_agent(ws, fake.base_url)
        events = await collect(agent.run("hi"))
        await agent.aclose()
    err = of(events, ev.Error)[-1]
    assert err.kind == "auth" and "ANTHROPIC_API_KEY" in err.message and SECRET not in err.message


async def test_cancel_mid_stream_keeps_a_valid_history_and_the_next_prompt_works(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic([reply("word " * 200, chunk=5, delay=0.02), reply("fine")]) as fake:
        agent = fake_agent(ws, fake.base_url)
        seen = []
        async for e in agent.run("long answer please"):
            seen.append(e)
            if len(of(seen, ev.TextDelta)) == 3:
                agent.cancel()
        assert seen[-1].stop_reason == "cancelled"
        assert agent.entries[-1].meta.get("cancelled") and agent.entries[-1].text().startswith("word")
        events = await collect(agent.run("short one"))
        assert events[-1].stop_reason == "end_turn"
        assert validate_history(project(agent.entries)) == []
        await agent.aclose()


async def test_cancel_mid_tool_answers_the_call_with_a_cancelled_error(tmp_path):
    ws = make_workspace(tmp_path)
    script = [reply(tool_use("bash", {"command": "sleep 5"}), tool_use("read_file", {"path": "README.md"})),
              reply("after cancel")]
    with FakeAnthropic(script) as fake:
        agent = fake_agent(ws, fake.base_url, allow=["bash"])
        seen = []
        async for e in agent.run("run it"):
            seen.append(e)
            if isinstance(e, ev.ToolResult):  # read_file is done, bash still sleeping
                agent.cancel()
        assert seen[-1].stop_reason == "cancelled"
        results = {b["tool_use_id"]: b for b in agent.entries[-1].content}
        assert len(results) == 2
        assert any(b.get("is_error") and "Cancelled" in b["content"] for b in results.values())
        assert any("Sample" in b["content"] for b in results.values())  # finished work kept
        assert validate_history(project(agent.entries)) == []
        assert (await collect(agent.run("go on")))[-1].stop_reason == "end_turn"
        await agent.aclose()


async def test_permission_ask_allow_and_deny(tmp_path):
    ws = make_workspace(tmp_path)
    answers = iter(["deny", "allow"])
    asked = []

    async def answering(agen) -> list[ev.Event]:
        """A front-end: answers each permission request on the request itself."""
        out = []
        async for e in agen:
            out.append(e)
            if isinstance(e, ev.PermissionRequest):
                asked.append(e)
                e.answer(next(answers))
        return out

    script = [reply(tool_use("write_file", {"path": "a.txt", "content": "x"})), reply("ok denied"),
              reply(tool_use("write_file", {"path": "b.txt", "content": "y"})), reply("ok written")]
    with FakeAnthropic(script) as fake:
        agent = fake_agent(ws, fake.base_url, interactive=True)
        events = await answering(agent.run("write a"))
        denied = of(events, ev.ToolResult)[0]
        assert denied.is_error and "denied" in denied.preview.lower()
        assert not (ws / "a.txt").exists()
        assert of(events, ev.PermissionRequest)[0].decision == "deny"
        # the model saw the denial as an error result
        sent = fake.message_requests[1]["messages"][-1]["content"][0]
        assert sent["type"] == "tool_result" and sent.get("is_error")
        events = await answering(agent.run("write b"))
        assert (ws / "b.txt").read_text() == "y"
        await agent.aclose()
    assert len(asked) == 2


async def test_headless_policy_denies_bash_unless_allowed(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic([reply(tool_use("bash", {"command": "echo hi"})), reply("done")]) as fake:
        agent = fake_agent(ws, fake.base_url)
        events = await collect(agent.run("run"))
        await agent.aclose()
    r = of(events, ev.ToolResult)[0]
    assert r.is_error and "--allow" in r.preview


async def test_compact_tool_runs_after_the_batch(tmp_path):
    ws = make_workspace(tmp_path)
    (ws / "src" / "util.py").write_text("def helper(x):\n    return x * 2  # doubles its input\n" * 400)
    script = [reply("reading", tool_use("read_file", {"path": "src/util.py"})),
              reply(tool_use("compact", {"focus": "the util module"}))]
    with FakeAnthropic(script, responder=echo_responder) as fake:
        agent = fake_agent(ws, fake.base_url)
        events = await collect(agent.run("look at util then compact"))
        await agent.aclose()
    comps = of(events, ev.Compaction)
    assert comps and comps[-1].trigger == "manual" and comps[-1].tokens_after < comps[-1].tokens_before
    kinds = [e.kind for e in agent.entries]
    assert "compact_boundary" in kinds and "summary" in kinds
    assert validate_history(project(agent.entries)) == []
    assert os.path.exists(comps[-1].transcript_path)


async def test_manual_compact_command(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic([reply("alpha " * 2000), reply("beta " * 2000)], responder=echo_responder) as fake:
        agent = fake_agent(ws, fake.base_url)
        await collect(agent.run("first"))
        await collect(agent.run("second"))
        before = agent.tokens()
        events = await collect(agent.compact("keep the plan"))
        await agent.aclose()
    assert of(events, ev.Compaction) and agent.tokens() < before
    summary_req = fake.message_requests[-1]
    # the main call's prefix: same system prompt and tools, no tool_choice of its own
    assert "tool_choice" not in summary_req and summary_req["tools"] == fake.message_requests[0]["tools"]
    assert summary_req["system"] == fake.message_requests[0]["system"]
    assert "keep the plan" in str(summary_req["messages"])


async def test_max_turns_and_budget_stop_a_run(tmp_path):
    ws = make_workspace(tmp_path)
    loop_reply = reply(tool_use("glob", {"pattern": "*"}))
    with FakeAnthropic([loop_reply] * 5) as fake:
        agent = fake_agent(ws, fake.base_url, max_turns=2)
        events = await collect(agent.run("loop"))
        await agent.aclose()
    assert events[-1].stop_reason == "max_turns" and len(fake.message_requests) == 2

    with FakeAnthropic([loop_reply] * 5) as fake:
        agent = fake_agent(ws, fake.base_url, max_budget_usd=0.000001)
        events = await collect(agent.run("loop"))
        await agent.aclose()
    assert events[-1].stop_reason == "budget" and len(fake.message_requests) == 1


async def test_no_secret_in_any_file_after_a_session(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic([reply(tool_use("bash", {"command": "env"})), reply("done")],
                       responder=echo_responder) as fake:
        agent = fake_agent(ws, fake.base_url, allow=["bash"])
        await collect(agent.run("show env"))
        await collect(agent.compact())
        await agent.aclose()
    found = []
    assert agent.session.path.is_file()
    for root, _dirs, files in os.walk(agent.session.path.parent.parent):
        for f in files:
            if SECRET in open(os.path.join(root, f), encoding="utf-8", errors="replace").read():
                found.append(f)
    assert not found


@pytest.mark.slow
async def test_a_long_session_runs_every_cheap_layer_and_stays_valid(tmp_path):
    """Small window, big tool outputs through the real SDK: results persisted, old ones cleared,
    spans collapsed; every request the fake server got was valid."""
    ws = make_workspace(tmp_path)
    with FakeAnthropic(responder=heavy_tool_session(ws), context_window=20_000) as fake:
        agent = fake_agent(ws, fake.base_url, allow=["bash"], context_window=20_000)
        # the layers' mechanics, so the token-only rules: with the cache rule (the default) a
        # layer may rightly wait for the cache to go cold (tests/compaction/test_cache_economics.py)
        agent.pipeline.config.cache_aware = False
        layers = set()
        for k in range(10):
            events = await collect(agent.run(f"prompt {k}"))
            layers |= {c.layer for c in of(events, ev.Compaction)}
            assert validate_history(project(agent.entries)) == []
            assert events[-1].stop_reason == "end_turn", of(events, ev.Error)
        await agent.aclose()
    assert {"tool_result_budget", "microcompact", "collapse"} <= layers, layers
    assert fake.requests and all(r.status == 200 for r in fake.requests)
    persisted = list((agent.session.path.parent / agent.session_id / "tool-results").glob("*.txt"))
    assert persisted


@pytest.mark.slow
async def test_summaries_take_over_when_collapse_is_off(tmp_path):
    ws = make_workspace(tmp_path)
    for i in range(6):
        (ws / f"big{i}.txt").write_text(f"row {i}\n" * 700)

    def responder(body):
        if is_summary_request(body):
            return echo_responder(body)
        if len(body["messages"]) % 8 == 7:
            return reply("Done with this part.")
        command = f"cat big{len(body['messages']) % 6}.txt"
        return reply("reading: " + "notes " * 500, tool_use("bash", {"command": command}))

    with FakeAnthropic(responder=responder) as fake:
        agent = fake_agent(ws, fake.base_url, allow=["bash"], context_window=20_000, disable_collapse=True)
        layers = set()
        for k in range(8):
            events = await collect(agent.run(f"prompt {k}"))
            layers |= {c.layer for c in of(events, ev.Compaction)}
            assert validate_history(project(agent.entries)) == []
        await agent.aclose()
    assert layers & {"session_memory", "autocompact"} and "collapse" not in layers, layers


async def test_resume_rebuilds_history_state_and_cost_exactly(tmp_path):
    ws = make_workspace(tmp_path)
    (ws / "huge.txt").write_text("payload line\n" * 8_000)
    script = [reply("look", tool_use("bash", {"command": "cat huge.txt"})), reply("seen it"), reply("again")]
    with FakeAnthropic(script, responder=echo_responder) as fake:
        # at a 100,000 window one result may hold 25,000 chars: bash's 30,000 is persisted, frozen
        agent = fake_agent(ws, fake.base_url, allow=["bash"], context_window=100_000)
        await collect(agent.run("read the big file"))
        first = fake.message_requests[-1]["messages"]
        state, cost, uuids = agent.pipeline.state.to_dict(), agent.cost.to_dict(), [e.uuid for e in agent.entries]
        assert state["layers"]["tool_result_budget"]["replaced"]
        await agent.aclose()

        again = fake_agent(ws, fake.base_url, allow=["bash"], context_window=100_000, resume=agent.session_id)
        assert [e.uuid for e in again.entries] == uuids
        assert again.pipeline.state.to_dict() == state and again.cost.to_dict() == cost
        assert again.cost_event().total_usd == agent.cost_event().total_usd
        await collect(again.run("go on"))
        resent = fake.message_requests[-1]["messages"]
        await again.aclose()
    # the persisted preview is byte-identical after the resume, so the cached prefix still matches
    strip = lambda msgs: json.dumps(msgs).replace(', "cache_control": {"type": "ephemeral"}', "")  # noqa: E731
    assert strip(resent[:len(first)]) == strip(first)


async def test_thresholds_follow_the_clients_window(tmp_path):
    """Config, client and pipeline agree on the window: one lookup, one source."""
    from agent_core.config import load_config

    ws = make_workspace(tmp_path)
    agent = fake_agent(ws, "http://127.0.0.1:9")
    config = load_config({"model": MODEL}, environ={"ANTHROPIC_API_KEY": SECRET}, workspace=ws)
    b = agent.pipeline.config.budget
    assert b.context_window == agent.info.context_window == config.resolved_context_window()
    assert b.max_output_tokens == agent.info.max_output_tokens
    small = fake_agent(ws, "http://127.0.0.1:9", context_window=50_000)
    assert small.pipeline.config.budget.context_window == small.info.context_window == 50_000
    await agent.aclose()
    await small.aclose()
