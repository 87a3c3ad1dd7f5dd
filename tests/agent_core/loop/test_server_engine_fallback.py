"""Issue 24: the server and hybrid engines send only what the API's compaction documentation allows
(`compact_20260112` on Opus 4.7 / 4.6, Sonnet 4.6 and Mythos Preview, with a trigger of 50,000
tokens at least), or the session runs the local engine and says why, once, at start. Through the
real SDK against the fake server, which refuses anything else as the API does."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from compaction import Pipeline
from agent_core import events as ev
from agent_core.loop.server_engine import ServerEnginePipeline
from app.cli.headless import main as headless_main
from app.cli.main import build_parser
from tests.agent_helpers import MODEL, SECRET, collect, fake_agent, make_workspace, of, user_dirs
from tests.fake_anthropic import FakeAnthropic, echo_responder, is_summary_request, reply

ROOT = Path(__file__).resolve().parents[3]
UNLISTED = "claude-sonnet-4-5"


def _meta(agent) -> dict:
    return json.loads(agent.session.path.read_text().splitlines()[0])


def _compact_edits(fake: FakeAnthropic) -> list[dict]:
    return [e for b in fake.message_requests for e in (b.get("context_management") or {}).get("edits", [])
            if e.get("type") == "compact_20260112"]


def _run(argv: list[str], environ: dict) -> tuple[int, str, str]:
    args = build_parser().parse_args(["--headless", *argv])
    out, err = io.StringIO(), io.StringIO()
    code = headless_main(args, stdin=io.StringIO(""), stdout=out, stderr=err, environ=environ)
    return code, out.getvalue(), err.getvalue()


def test_an_unlisted_model_runs_the_local_engine_and_says_why_on_stderr(tmp_path):
    """`CTXTUI_ENGINE=server ctxtui --headless` on claude-sonnet-4-5: compaction was requested for a
    model the documentation does not list. Now no server-side edit is sent at all, the run answers,
    and stderr says why once."""
    ws = make_workspace(tmp_path)
    env = {**user_dirs(), "ANTHROPIC_API_KEY": SECRET, "CTXTUI_MODEL": UNLISTED, "CTXTUI_ENGINE": "server"}
    with FakeAnthropic([reply("the answer")]) as fake:
        code, out, err = _run(["-p", "hi", "--workspace", str(ws), "--base-url", fake.base_url],
                              {**env, "ANTHROPIC_BASE_URL": fake.base_url})
        requests = fake.requests
    assert code == 0, err
    assert "the answer" in out
    assert all(r.status == 200 for r in requests)
    assert not any("context_management" in r.body for r in requests)
    assert not any("anthropic-beta" in r.headers for r in requests)
    notes = [line for line in err.splitlines() if "CTXTUI_ENGINE=server cannot be used" in line]
    assert len(notes) == 1, err
    assert notes[0].startswith("[note] CTXTUI_ENGINE=server cannot be used: the API's server compaction")
    assert "'claude-sonnet-4-5' is not one of them" in notes[0] and "claude-sonnet-4-6" in notes[0]
    assert notes[0].endswith("This session runs the local engine (ctxtui's own compaction) instead.")


def test_the_notice_opens_stream_json_and_the_log_records_the_engine_used(tmp_path):
    ws = make_workspace(tmp_path)
    env = {**user_dirs(), "ANTHROPIC_API_KEY": SECRET, "CTXTUI_MODEL": UNLISTED}
    with FakeAnthropic([reply("the answer")]) as fake:
        code, out, err = _run(["-p", "hi", "--workspace", str(ws), "--base-url", fake.base_url, "--engine", "hybrid",
                               "--output-format", "stream-json"], {**env, "ANTHROPIC_BASE_URL": fake.base_url})
        assert not _compact_edits(fake)
    assert code == 0, err
    events = [json.loads(line) for line in out.splitlines()]
    first = events[0]
    assert first["type"] == "notice" and first["message"].startswith("--engine hybrid cannot be used: ")
    assert sum("cannot be used" in e.get("message", "") for e in events) == 1
    assert events[-1]["type"] == "result" and events[-1]["stop_reason"] == "end_turn"
    (log,) = Path(user_dirs()["CTXTUI_HOME"]).rglob(f"{events[-1]['session_id']}.jsonl")
    meta = json.loads(log.read_text().splitlines()[0])
    assert meta["engine"] == "local" and meta["config"]["engine"] == "hybrid"
    assert meta["engine_notice"] == first["message"]


@pytest.mark.parametrize("engine", ["server", "hybrid"])
async def test_a_20k_window_falls_back_with_the_reason(tmp_path, engine):
    """The issue's case: at a 20,000 window the threshold (16,700) was sent as the compaction
    trigger. Now the session runs the local engine, says which window would be needed, and
    compacts on its own when the context fills."""
    ws = make_workspace(tmp_path)

    def responder(body):
        return echo_responder(body) if is_summary_request(body) else reply("noted: " + "detail " * 600)
    with FakeAnthropic(responder=responder) as fake:
        agent = fake_agent(ws, fake.base_url, context_window=20_000, engine=engine)
        assert agent.engine == "local" and type(agent.pipeline) is Pipeline
        assert agent.client.server is None
        assert agent.engine_notice == (
            f"--engine {engine} cannot be used: at a 20,000-token context window ctxtui compacts at 16,700 "
            f"tokens, and the API's compaction trigger may not be below 50,000 tokens; that needs a context window "
            f"of at least 60,000. This session runs the local engine (ctxtui's own compaction) instead.")
        assert agent.engine_notice in agent.client.info.notes
        events = []
        for k in range(14):
            events += await collect(agent.run(f"step {k} " + "please " * 300))
            assert events[-1].stop_reason == "end_turn", [e.message for e in of(events, ev.Error)]
        assert any(c.layer not in ("server_compact", "server_clear_tool_uses") for c in of(events, ev.Compaction))
        assert not any(c.layer.startswith("server_") for c in of(events, ev.Compaction))
        assert all(r.status == 200 for r in fake.requests)
        assert not any("context_management" in b for b in fake.message_requests)
        meta = _meta(agent)
        assert meta["engine"] == "local" and meta["engine_notice"] == agent.engine_notice
        await agent.aclose()


async def test_a_low_auto_compact_percentage_falls_back_too(tmp_path):
    """A 200,000 window with --autocompact-pct 20 compacts at 36,000 (20% of the 180,000 effective
    window): below the API's minimum, so the old code sent a trigger the API refuses."""
    ws = make_workspace(tmp_path)
    with FakeAnthropic([reply("ok")]) as fake:
        agent = fake_agent(ws, fake.base_url, engine="server", autocompact_pct=20)
        assert agent.engine == "local" and "compacts at 36,000 tokens" in agent.engine_notice
        assert "auto-compact percentage" in agent.engine_notice
        events = await collect(agent.run("hi"))
        assert events[-1].stop_reason == "end_turn"
        assert not _compact_edits(fake)
        await agent.aclose()


@pytest.mark.parametrize("engine", ["server", "hybrid"])
async def test_a_200k_window_on_a_listed_model_sends_a_documented_trigger(tmp_path, engine):
    ws = make_workspace(tmp_path)
    with FakeAnthropic([reply("ok")]) as fake:
        agent = fake_agent(ws, fake.base_url, engine=engine)
        assert agent.engine == engine and agent.engine_notice is None
        assert isinstance(agent.pipeline, ServerEnginePipeline)
        events = await collect(agent.run("hi"))
        assert events[-1].stop_reason == "end_turn" and not of(events, ev.Error)
        (edit,) = _compact_edits(fake)
        assert edit["trigger"]["value"] == agent.pipeline.config.budget.autocompact_threshold == 167_000
        assert edit["trigger"]["value"] >= 50_000
        assert fake.message_requests[0]["model"] == MODEL
        assert not [n for n in agent.client.info.notes if "cannot be used" in n]
        assert _meta(agent)["engine"] == engine and "engine_notice" not in _meta(agent)
        await agent.aclose()


def test_the_cli_says_it_in_text_mode(tmp_path):
    """`ctxtui --headless --engine server --context-window 20000` as a user runs it."""
    ws = make_workspace(tmp_path)
    env = {**os.environ, **user_dirs(), "ANTHROPIC_API_KEY": SECRET, "CTXTUI_MODEL": MODEL}
    with FakeAnthropic([reply("the answer")]) as fake:
        done = subprocess.run([sys.executable, "-m", "app.cli", "--headless", "-p", "hi", "--workspace", str(ws),
                               "--engine", "server", "--context-window", "20000", "--base-url", fake.base_url],
                              cwd=ROOT, env={**env, "ANTHROPIC_BASE_URL": fake.base_url}, capture_output=True,
                              text=True, timeout=120)
        assert not _compact_edits(fake)
    assert done.returncode == 0, done.stderr
    assert "the answer" in done.stdout
    assert done.stderr.count("--engine server cannot be used") == 1
    assert "that needs a context window of at least 60,000" in done.stderr


async def test_the_demo_still_emulates_the_server_engine_at_its_small_window(tmp_path):
    """The offline demo sends nothing to the API: it keeps emulating server compaction at its own
    window (docs/engine.md says so), with no fallback notice."""
    from tests.agent_helpers import demo_agent
    agent = demo_agent(make_workspace(tmp_path), engine="server", context_window=8_000)
    assert agent.engine == "server" and agent.engine_notice is None
    assert isinstance(agent.pipeline, ServerEnginePipeline) and agent.client.server is not None
    await agent.aclose()


async def test_a_resumed_session_logs_the_fallback_as_a_notice(tmp_path):
    """A resumed log's meta is its first run's: the run that falls back says so in an event."""
    ws = make_workspace(tmp_path)
    with FakeAnthropic(responder=lambda body: reply("ok")) as fake:
        first = fake_agent(ws, fake.base_url)
        await collect(first.run("hi"))
        sid = first.session_id
        await first.aclose()
        again = fake_agent(ws, fake.base_url, engine="server", model=UNLISTED, resume=sid)
        assert again.engine == "local"
        events = await collect(again.run("and again"))
        assert events[-1].stop_reason == "end_turn"
        await again.aclose()
        assert not _compact_edits(fake)
    records = [json.loads(line) for line in again.session.path.read_text().splitlines()]
    notices = [r["event"] for r in records if r.get("t") == "event" and r["event"].get("type") == "notice"]
    assert [n["message"] for n in notices] == [again.engine_notice]
