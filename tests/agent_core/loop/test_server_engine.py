"""The server and hybrid engines (issue 16) through the loop, the real SDK and the fake server: the
server's clears and compactions become compaction events like ours, a compaction block replaces
what it summarizes and survives resume, a failed one changes nothing, a pause after compaction
goes on to the answer, and the compaction's own usage is booked as compaction cost."""
from __future__ import annotations

import json

import pytest

from compaction import validate_history
from compaction.entry import project
from agent_core import events as ev
from agent_core.config import ConfigError
from agent_core.logs.reader import LogReader
from agent_core.logs.records import CompactionRecord, UsageRecord
from agent_core.providers.server_context import COMPACT_BETA, CONTEXT_MANAGEMENT_BETA, ServerPlan
from tests.agent_helpers import collect, demo_agent, fake_agent, heavy_tool_session, make_workspace, of
from tests.fake_anthropic import FakeAnthropic, reply

# The API's compaction takes a trigger of 50,000 tokens at least: windows here are 100,000 (the
# auto-compact threshold 83,500), and what fills them is as large as the window calls for.
WINDOW = 100_000
TURNS = 12            # of about 10,500 tokens each (_text_session): the server compacts by the eighth
CHUNK = 2_048         # characters a text delta: long answers stream in a few events


def _heavy_tool_session(ws):
    """agent_helpers.heavy_tool_session scaled to WINDOW: twelve 24 KB files (about 6,000 tokens a
    cat) and long reasoning, so the result budget, then the server's clearing, then its compaction act."""
    return heavy_tool_session(ws, scale=2.5, chunk=CHUNK)


def _text_session(words: int = 6_000):
    """Plain text answers: nothing a cheap layer can clear, so only a summary makes room."""
    def responder(body):
        return reply("noted: " + "detail " * words, chunk=CHUNK)
    return responder


async def _turns(agent, n: int, prompt: str = "next step") -> list[ev.Event]:
    out: list[ev.Event] = []
    for k in range(n):
        events = await collect(agent.run(f"{prompt} {k}"))
        assert events[-1].stop_reason == "end_turn", [e.message for e in of(events, ev.Error)]
        out += events
    return out


def _hybrid(ws, base_url: str, **cli):
    """The hybrid engine at a 100,000 window (collapse off, so only the server's summary makes room)."""
    return fake_agent(ws, base_url, context_window=WINDOW, engine="hybrid", disable_collapse=True, **cli)


async def _after_a_server_compaction(ws, base_url: str):
    """A hybrid session run until the server has compacted: (the agent, its events)."""
    agent = _hybrid(ws, base_url)
    events = await _turns(agent, TURNS)
    assert any(c.layer == "server_compact" for c in of(events, ev.Compaction))
    return agent, events


@pytest.mark.slow
async def test_server_engine_long_session(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic(responder=_heavy_tool_session(ws)) as fake:
        agent = fake_agent(ws, fake.base_url, context_window=WINDOW, engine="server", allow=["bash"])
        events = await _turns(agent, 12)
        layers = [c.layer for c in of(events, ev.Compaction)]
        # Our layers stay off but the tool-result budget; the server clears, then compacts.
        assert set(layers) <= {"tool_result_budget", "server_clear_tool_uses", "server_compact"}
        assert "server_clear_tool_uses" in layers and "server_compact" in layers
        requests = fake.message_requests
        assert all(r.status == 200 for r in fake.requests)
        assert all(r["context_management"]["edits"][-1]["type"] == "compact_20260112" for r in requests)
        first = next(r for r in fake.requests if r.path == "/v1/messages")   # (the head is counted first)
        assert first.headers["anthropic-beta"] == f"{CONTEXT_MANAGEMENT_BETA},{COMPACT_BETA}"
        compact = of(events, ev.Compaction)[layers.index("server_compact")]
        assert compact.tokens_after < compact.tokens_before and compact.usage["output_tokens"] > 0
        assert compact.parts is not None and compact.parts["removed"]
        # The history now opens with the compaction block, sent back as it came.
        block = next(r.compaction for r in fake.requests if r.compaction)
        first_sent = project(agent.entries)[0]
        assert first_sent["role"] == "assistant" and first_sent["content"][0] == block
        assert validate_history(project(agent.entries)) == []
        assert "compaction" in agent.cost.purposes and agent.cost.purposes["compaction"].requests >= 1
        sources = {c.source for c in of(events, ev.ContextUpdate)}
        assert "server" in sources
        await agent.aclose()


async def test_hybrid_uses_cheap_layers_then_the_server_summary(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic(responder=_text_session()) as fake:
        agent = _hybrid(ws, fake.base_url)
        events = await _turns(agent, TURNS)
        layers = [c.layer for c in of(events, ev.Compaction)]
        assert "server_compact" in layers and "autocompact" not in layers and "session_memory" not in layers
        assert not any(r.body.get("context_management", {}).get("edits", [{}])[0].get("type") ==
                       "clear_tool_uses_20250919" for r in fake.requests)
        first = next(r for r in fake.requests if r.path == "/v1/messages")   # (the head is counted first)
        assert first.headers["anthropic-beta"] == COMPACT_BETA
        # No summary call of our own was made: every request is a main call with the compact edit.
        assert all("context_management" in b for b in fake.message_requests)
        await agent.aclose()


async def test_failed_compaction_is_a_no_op(tmp_path):
    ws = make_workspace(tmp_path)
    script = _text_session()
    failing = {"n": 0}

    def responder(body):
        item = script(body)
        failing["n"] += 1
        return {**item, "compaction_fails": True}
    with FakeAnthropic(responder=responder) as fake:
        agent = _hybrid(ws, fake.base_url)
        events = []
        for k in range(TURNS):
            events += await collect(agent.run(f"step {k}"))
            if of(events, ev.Error):
                break
        errors = [e for e in of(events, ev.Error) if e.kind == "compaction"]
        assert errors and "no summary" in errors[0].message
        assert not any(c.layer == "server_compact" for c in of(events, ev.Compaction))
        # The empty block stays in the history as returned, and the history still opens with the user.
        assert project(agent.entries)[0]["role"] == "user"
        assert any(b == {"type": "compaction", "content": None, "encrypted_content": None}
                   for e in agent.entries for b in e.content)
        assert validate_history(project(agent.entries)) == []
        await agent.aclose()


@pytest.mark.slow
async def test_pause_after_compaction_goes_on_to_the_answer(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic(responder=_text_session()) as fake:
        agent = _hybrid(ws, fake.base_url)
        trigger = agent.pipeline.config.budget.autocompact_threshold
        agent.client.server = ServerPlan("hybrid", compact_trigger=trigger, pause_after_compaction=True)
        events = await _turns(agent, TURNS)
        paused = [e for e in of(events, ev.AssistantDone) if e.stop_reason == "compaction"]
        assert paused, "the server never paused"
        i = events.index(paused[0])
        assert any(isinstance(e, ev.AssistantDone) and e.stop_reason == "end_turn" for e in events[i + 1:])
        assert fake.message_requests[-1]["context_management"]["edits"][0]["pause_after_compaction"] is True
        assert validate_history(project(agent.entries)) == []
        await agent.aclose()


@pytest.mark.slow
async def test_resume_after_a_server_compaction(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic(responder=_text_session()) as fake:
        agent, _ = await _after_a_server_compaction(ws, fake.base_url)
        sid, before = agent.session_id, project(agent.entries)
        await agent.aclose()
        again = _hybrid(ws, fake.base_url, resume=sid)
        assert project(again.entries) == before
        assert any(c.layer == "server_compact" for c in again.compactions)
        n = len(fake.message_requests)
        await _turns(again, 1)
        sent = fake.message_requests[n]["messages"]
        assert sent[0]["content"][0]["type"] == "compaction" and sent[0]["content"][0] == before[0]["content"][0]
        await again.aclose()


def test_engine_setting_and_demo(tmp_path):
    ws = make_workspace(tmp_path)
    with pytest.raises(ConfigError) as err:
        fake_agent(ws, "http://127.0.0.1:9", engine="cloud")
    assert "--engine" in str(err.value) and "local, server or hybrid" in str(err.value)


@pytest.mark.slow
async def test_stream_json_fields_match_local_compactions(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic(responder=_text_session()) as fake:
        agent, events = await _after_a_server_compaction(ws, fake.base_url)
        server = next(c for c in of(events, ev.Compaction) if c.layer == "server_compact")
        local = ev.Compaction(layer="autocompact", trigger="auto", tokens_before=2, tokens_after=1)
        assert set(json.loads(json.dumps(server.to_dict()))) == set(local.to_dict())
        logged = [json.loads(line) for line in agent.session.path.read_text().splitlines()]
        assert any(json.dumps(r).count('"layer": "server_compact"') for r in logged)
        # What watch and usage read from the log: the compaction, and the compaction step's cost.
        records = LogReader(agent.session.path).read(final=True)
        assert any(isinstance(r, CompactionRecord) and r.layer == "server_compact" for r in records)
        assert any(isinstance(r, UsageRecord) and r.purpose == "compaction" for r in records)
        await agent.aclose()


async def test_the_demo_model_emulates_server_compaction(tmp_path):
    ws = make_workspace(tmp_path)
    agent = demo_agent(ws, engine="server", context_window=8_000)
    events: list[ev.Event] = []
    for k in range(12):
        events += await collect(agent.run(f"look at the code and explain part {k} in detail"))
        assert validate_history(project(agent.entries)) == [], k
    compactions = [c for c in of(events, ev.Compaction) if c.layer == "server_compact"]
    assert compactions and all(c.tokens_after < c.tokens_before for c in compactions)
    assert any(e.purpose == "server" for e in of(events, ev.CompactionStarted))
    assert agent.cost.purposes["compaction"].requests == len(compactions)
    assert project(agent.entries)[0]["content"][0]["type"] == "compaction"
    await agent.aclose()


async def test_a_server_compacted_session_resumes_with_the_local_engine(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic(responder=_text_session()) as fake:
        agent, _ = await _after_a_server_compaction(ws, fake.base_url)
        sid = agent.session_id
        await agent.aclose()
        # (auto-compact off: the local engine would otherwise summarize the block away at once)
        local = fake_agent(ws, fake.base_url, context_window=WINDOW, resume=sid, disable_autocompact=True)
        n = len(fake.requests)
        await _turns(local, 1)
        sent = fake.requests[n]
        # The block still opens the history; it goes with the compaction beta and no edit.
        assert sent.body["messages"][0]["content"][0]["type"] == "compaction"
        assert sent.headers["anthropic-beta"] == COMPACT_BETA and "context_management" not in sent.body
        await local.aclose()
