"""The compaction preview (issue 27): what `/compact [focus]` would do now, through the real SDK
against the fake server, with nothing changed — the history, the engine's saved state, the session
log and the files on disk are byte for byte what they were — and a closed loop: the compaction run
right after does what the preview said (the same layers and count for session memory; for the
LLM summary, the count a summary of the previewed size gives)."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from agent_core import events as ev
from agent_core.loop.compaction_preview import PreviewError, summary_size
from compaction import clock
from tests.agent_helpers import collect, fake_agent, make_workspace, of
from tests.fake_anthropic import FakeAnthropic, echo_responder, is_summary_request, reply, tool_use

WINDOW = 60_000
SUMMARY = "<summary>The user asked about the helpers; src/util.py doubles its input. " * 12 + "</summary>"


def files_under(*roots: Path) -> dict[str, tuple[int, int, bytes]]:
    """Every file below `roots`: its size, modified time and bytes."""
    out = {}
    for root in roots:
        for dirpath, _dirs, names in os.walk(root):
            for n in names:
                p = Path(dirpath) / n
                st = p.stat()
                out[str(p)] = (st.st_size, st.st_mtime_ns, p.read_bytes())
    return out


def responder(body):
    if is_summary_request(body):
        return reply(SUMMARY)
    return echo_responder(body)


async def _session(ws: Path, fake, turns: int = 6, **cli):
    agent = fake_agent(ws, fake.base_url, context_window=WINDOW, **cli)
    for i in range(turns):
        await collect(agent.run(f"Question {i}: what does helper do in src/util.py? " + "Please be thorough. " * 300))
    return agent


def _state(agent) -> tuple:
    return ([e.to_dict() for e in agent.entries], json.dumps(agent.pipeline.snapshot(), sort_keys=True),
            len(agent.compactions))


async def test_a_preview_changes_nothing_and_the_compaction_after_it_does_what_it_said(tmp_path, monkeypatch):
    ws = make_workspace(tmp_path)
    home = Path(os.environ["CTXTUI_HOME"])
    with FakeAnthropic(responder=responder) as fake:
        agent = await _session(ws, fake)
        # Transcript names are stamped to the second: the preview and the compaction after it must
        # read the same second, or a loaded machine crossing one names them apart (issue 51's flake).
        # Two clocks to stop: the preview reads the agent's (bound to clock.now when it was made),
        # the compaction the module's. Stopped 30 s on, so a side still on the wall clock shows in
        # the names below at once, not once in hundreds of runs (30 s is well inside the cache TTL).
        frozen = float(int(clock.now()) + 30)
        agent.clock = lambda: frozen
        monkeypatch.setattr(clock, "now", lambda: frozen)
        before, disk, calls = _state(agent), files_under(home, ws), len(fake.message_requests)
        preview = await agent.preview_compact()
        assert _state(agent) == before
        assert files_under(home, ws) == disk          # no transcript, no saved result, no log line
        assert len(fake.message_requests) == calls    # no model call
        assert preview.acts and preview.steps and preview.tokens_after < preview.tokens_before
        assert preview.tokens_before == agent.tokens()
        events = await collect(agent.compact())
        await agent.aclose()
    done = of(events, ev.Compaction)
    assert [s.layer for s in preview.steps if s.acted] == [c.layer for c in done]
    assert done[-1].layer == "session_memory"       # no model: the preview's count is the compaction's
    assert preview.tokens_after == done[-1].tokens_after
    assert preview.compaction.parts["removed_count"] == done[-1].parts["removed_count"]
    assert preview.compaction.transcript_path == done[-1].transcript_path    # named, then written
    assert Path(done[-1].transcript_path).name.startswith(time.strftime("%Y%m%dT%H%M%S", time.gmtime(frozen)))
    assert preview.summary_tokens is None and preview.summary_usd is None


async def test_a_focus_previews_the_llm_summary_at_this_sessions_summary_size(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic(responder=responder) as fake:
        agent = await _session(ws, fake)
        first = of(await collect(agent.compact("the helpers")), ev.Compaction)[-1]
        assert first.layer == "autocompact"
        for i in range(3):
            await collect(agent.run(f"Follow-up {i}: and src/app.py? " + "Tell me more. " * 30))
        calls = len(fake.message_requests)
        preview = await agent.preview_compact("the helpers")
        assert len(fake.message_requests) == calls
        size = summary_size(agent.compactions, agent.pipeline.budget.autocompact_threshold, 10**6)
        assert preview.summary_tokens == first.usage["output_tokens"] == size[0]
        assert "median of this session's 1 summary" in preview.summary_source
        done = of(await collect(agent.compact("the helpers")), ev.Compaction)[-1]
        await agent.aclose()
    assert done.layer == preview.compaction.layer == "autocompact"
    # the real summary is the fake's text, the preview's a filler of its size: the counts agree closely
    assert abs(preview.tokens_after - done.tokens_after) <= 0.05 * done.tokens_after, (preview.tokens_after,
                                                                                         done.tokens_after)
    summary = next(a for a in preview.compaction.parts["added"] if a["kind"] == "summary")
    assert "A preview calls no model" in summary["text"]
    # the summary call is priced: it reads the cached prefix and writes the rest, its output the summary
    assert preview.summary_usd is not None and preview.summary_usd > 0
    u = preview.compaction.usage
    assert u["output_tokens"] == preview.summary_tokens and u["cache_read_input_tokens"] > 0


async def test_the_economics_add_up(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic(responder=responder) as fake:
        agent = await _session(ws, fake)
        warm = await agent.preview_compact()
        agent.clock = lambda: clock.now() + 3_600     # past the 5-minute TTL: the cache is cold
        cold = await agent.preview_compact()
        await agent.aclose()
    assert not warm.cold and warm.rewrite_tokens > 0 and warm.next_call_usd > 0
    assert warm.saves_per_call_usd > 0
    assert warm.payback_calls == pytest.approx(warm.next_call_usd / warm.saves_per_call_usd)
    d = warm.to_dict()
    assert d["preview"] is True and d["next_call_usd"] == round(warm.next_call_usd, 6)
    assert cold.cold and cold.rewrite_tokens == 0
    assert cold.next_call_usd < 0 and cold.payback_calls == 0     # a cold rewrite pays at once
    # no tool result in this session: nothing to read again, nothing priced
    assert warm.reread_tokens == 0 and d["reread_tokens"] == 0 and d["reread_usd"] == 0
    assert "lost_tokens" not in warm.compaction.cache


async def test_nothing_to_compact_and_a_running_turn(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic(responder=responder) as fake:
        agent = fake_agent(ws, fake.base_url, context_window=WINDOW)
        empty = await agent.preview_compact()
        assert not empty.acts and empty.note == "Nothing to compact yet."
        assert empty.to_dict()["parts"] is None
        turn = agent.run("What does helper do?")
        await turn.__anext__()                 # the turn has started and waits for its events to be read
        assert agent.busy
        with pytest.raises(PreviewError, match="A turn is running"):
            await agent.preview_compact()
        await collect(turn)
        await agent.aclose()


async def test_a_preview_with_unknown_prices_gives_tokens_and_no_dollars(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic(responder=responder) as fake:
        agent = await _session(ws, fake)
        agent.pipeline.config.cache_rates_known = False
        preview = await agent.preview_compact("the helpers")
        await agent.aclose()
    assert preview.acts and preview.rewrite_tokens > 0
    assert preview.next_call_usd is preview.saves_per_call_usd is preview.summary_usd is None
    assert preview.reread_usd is None
    assert preview.to_dict()["next_call_usd"] is None and preview.to_dict()["reread_usd"] is None


async def test_a_reading_session_previews_the_files_it_would_lose(tmp_path):
    ws = make_workspace(tmp_path)
    script = [reply("Reading it.", tool_use("read_file", {"path": "src/util.py"})),
              reply("It doubles its input. " * 200)]
    with FakeAnthropic(script, responder=responder) as fake:
        agent = fake_agent(ws, fake.base_url, context_window=WINDOW)
        await collect(agent.run("What does helper do in src/util.py? " * 20))
        preview = await agent.preview_compact("the helpers")
        await agent.aclose()
    loss = preview.compaction.parts["loss"]
    assert loss["prompts"]["total"] == 1
    assert any("tool result" in label for _u, label, _t in preview.compaction.parts["removed"])


def _reading_responder(files: int):
    """A model that reads one file per prompt (`mod0.py`, `mod1.py`, …) and then answers."""
    n = {"i": 0}

    def responder(body):
        if is_summary_request(body):
            return reply(SUMMARY)
        n["i"] += 1
        if n["i"] % 2 == 1:
            return reply("Reading.", tool_use("read_file", {"path": f"mod{(n['i'] // 2) % files}.py"}))
        return reply("It sets a value. " * 50)
    return responder


async def test_a_preview_carries_the_rereads_the_engine_priced(tmp_path):
    """Issue 49 (7): eight files read one prompt each, then `/compact --preview`: session memory
    would remove the older reads, prices what the agent would read again, and the preview carries
    that figure (and its JSON); the compaction run right after reports the same one."""
    ws = make_workspace(tmp_path)
    for i in range(8):
        (ws / f"mod{i}.py").write_text(f"VALUE_{i} = {i}\n" + "x = 1\n" * 600)
    with FakeAnthropic(responder=_reading_responder(8)) as fake:
        agent = fake_agent(ws, fake.base_url, context_window=WINDOW)
        for i in range(8):
            await collect(agent.run(f"Question {i}: what is in mod{i}.py?"))
        preview = await agent.preview_compact()
        done = of(await collect(agent.compact()), ev.Compaction)
        await agent.aclose()
    assert preview.acts and preview.compaction.layer == "session_memory"
    assert preview.compaction.parts["loss"]["files_gone_count"] >= 1      # mod0.py is not re-attached
    assert preview.reread_tokens > 0 and preview.reread_usd > 0
    # the preview's event carries the figure as a compaction's does, and the JSON says it
    assert preview.compaction.cache["lost_tokens"] == preview.reread_tokens
    assert preview.compaction.cache["reread_usd"] == round(preview.reread_usd, 6)
    d = json.loads(json.dumps(preview.to_dict()))
    assert d["reread_usd"] == round(preview.reread_usd, 6) and d["reread_tokens"] == preview.reread_tokens
    # as the engine priced them: the compaction itself expects the same re-reads
    assert done[-1].layer == "session_memory"
    assert done[-1].cache["reread_usd"] == d["reread_usd"] and done[-1].cache["lost_tokens"] == d["reread_tokens"]
