"""`ctxtui --headless`: output formats, exit codes, resume, interruption, no textual."""
from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.cli.headless import main as headless_main
from agent_core.sessions.paths import project_state_dir, state_root
from agent_core.logs.discover import latest_session
from agent_core.sessions.session_reader import load_session
from app.cli.main import build_parser, main as cli_main
from compaction import project, validate_history
from tests.fake_anthropic import is_summary_request, FakeAnthropic, echo_responder, reply, server_error, tool_use

from tests.agent_helpers import MODEL, SECRET, make_workspace, user_dirs, wait_for
from tests.headless_helpers import compacting_session

ROOT = Path(__file__).resolve().parents[3]


def run(argv, environ, stdin_text=None):
    args = build_parser().parse_args(["--headless", *argv])
    out, err = io.StringIO(), io.StringIO()
    stdin = io.StringIO(stdin_text) if stdin_text is not None else _Tty()
    code = headless_main(args, stdin=stdin, stdout=out, stderr=err, environ=environ)
    return code, out.getvalue(), err.getvalue()


class _Tty(io.StringIO):
    def isatty(self):
        return True


def env_for(fake):
    return {**user_dirs(), "ANTHROPIC_API_KEY": SECRET, "ANTHROPIC_BASE_URL": fake.base_url, "CTXTUI_MODEL": MODEL}


def test_text_output_streams_the_answer_and_closes_on_stderr(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic([reply("Hello from the model.")]) as fake:
        code, out, err = run(["-p", "hi", "--workspace", str(ws)], env_for(fake))
    assert code == 0
    assert out.strip() == "Hello from the model."
    assert "[done] end_turn" in err and "turns 1" in err and "cost $" in err


def test_prompt_from_stdin(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic(responder=echo_responder) as fake:
        code, out, _ = run(["--workspace", str(ws)], env_for(fake), stdin_text="piped prompt")
    assert code == 0 and "piped prompt" in out


def test_stream_json_has_typed_events_and_a_result(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic([reply(tool_use("glob", {"pattern": "*"})), reply("done")]) as fake:
        code, out, _ = run(["-p", "go", "--workspace", str(ws), "--output-format", "stream-json"], env_for(fake))
    assert code == 0
    lines = [json.loads(line) for line in out.splitlines()]
    types = [d["type"] for d in lines]
    for t in ("context", "tool_call", "tool_result", "cost", "turn_finished", "result"):
        assert t in types
    ctx = next(d for d in lines if d["type"] == "context")
    assert {"tokens", "window", "threshold", "state", "percent_left"} <= set(ctx)
    assert ctx["state"] in ("ok", "warning", "error", "autocompact", "blocking")
    cost = [d for d in lines if d["type"] == "cost"][-1]
    assert cost["total_usd"] > 0 and cost["by_model"][MODEL]["cost_usd"] > 0
    result = lines[-1]
    assert result["type"] == "result" and result["stop_reason"] == "end_turn" and result["turns"] == 1
    assert result["is_error"] is False and result["session_id"] and result["total_usd"] == cost["total_usd"]


def test_json_is_one_object_at_the_end(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic([reply("answer text")]) as fake:
        code, out, _ = run(["-p", "q", "--workspace", str(ws), "--output-format", "json"], env_for(fake))
    assert code == 0
    (obj,) = [json.loads(line) for line in out.splitlines()]
    assert obj["type"] == "result" and obj["text"] == "answer text"
    assert obj["context"]["type"] == "context" and obj["cost"]["type"] == "cost" and obj["compactions"] == []


def test_bad_setting_exits_2_naming_the_variable(tmp_path):
    ws = make_workspace(tmp_path)
    code, _, err = run(["-p", "x", "--workspace", str(ws)], {"CTXTUI_CONTEXT_WINDOW": "lots"})
    assert code == 2 and "CTXTUI_CONTEXT_WINDOW" in err


def test_missing_prompt_exits_2(tmp_path):
    ws = make_workspace(tmp_path)
    code, _, err = run(["--workspace", str(ws)], {})
    assert code == 2 and "-p" in err


def test_api_failure_exits_1(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic([server_error(retry_after=0.01)] * 10) as fake:
        code, _, err = run(["-p", "x", "--workspace", str(ws)], env_for(fake))
    assert code == 1 and "[error] server" in err


def test_budget_stops_the_run_with_exit_1(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic([reply(tool_use("glob", {"pattern": "*"}))] * 5) as fake:
        code, out, _ = run(["-p", "x", "--workspace", str(ws), "--max-budget-usd", "0.000001",
                            "--output-format", "stream-json"], env_for(fake))
    result = json.loads(out.splitlines()[-1])
    assert code == 1 and result["stop_reason"] == "budget" and result["is_error"] is True
    assert len(fake.message_requests) == 1


def test_denied_tool_is_reported_to_model_and_user(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic([reply(tool_use("bash", {"command": "rm -rf x"})), reply("I could not run it.")]) as fake:
        code, _, err = run(["-p", "x", "--workspace", str(ws)], env_for(fake))
        sent = fake.message_requests[1]["messages"][-1]["content"][0]
    assert code == 0
    assert sent["is_error"] and "--allow bash" in sent["content"]
    assert "[tool error] bash" in err and "--allow" in err


def test_allowed_tool_runs(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic([reply(tool_use("bash", {"command": "echo made > f.txt"})), reply("ok")]) as fake:
        code, _, _ = run(["-p", "x", "--workspace", str(ws), "--allow", "bash"], env_for(fake))
    assert code == 0 and (ws / "f.txt").read_text() == "made\n"


def test_a_run_that_compacts_reports_it(tmp_path):
    ws = make_workspace(tmp_path)
    responder = compacting_session(ws)

    with FakeAnthropic(responder=responder) as fake:
        code, out, _ = run(["-p", "read it all", "--workspace", str(ws), "--allow", "bash", "--context-window",
                            "12000", "--output-format", "stream-json"], env_for(fake))
    comps = [d for d in map(json.loads, out.splitlines()) if d["type"] == "compaction"]
    assert code == 0 and comps
    assert all(c["tokens_after"] < c["tokens_before"] for c in comps)
    assert {"layer", "trigger", "tokens_before", "tokens_after"} <= set(comps[0])


def test_continue_resumes_the_latest_session(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic(responder=echo_responder) as fake:
        code1, out1, _ = run(["-p", "remember 42", "--workspace", str(ws), "--output-format", "json"], env_for(fake))
        code2, out2, _ = run(["-p", "what number?", "--workspace", str(ws), "--continue", "--output-format", "json"],
                             env_for(fake))
        second = fake.message_requests[-1]["messages"]
    assert code1 == code2 == 0
    assert json.loads(out1)["session_id"] == json.loads(out2)["session_id"]
    assert "remember 42" in json.dumps(second)


def test_resume_by_id_and_an_unknown_id(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic(responder=echo_responder) as fake:
        _, out1, _ = run(["-p", "first session", "--workspace", str(ws), "--output-format", "json"], env_for(fake))
        _, out2, _ = run(["-p", "second session", "--workspace", str(ws), "--output-format", "json"], env_for(fake))
        sid = json.loads(out1)["session_id"]
        code, out3, _ = run(["-p", "back to the first", "--workspace", str(ws), "--resume", sid,
                             "--output-format", "json"], env_for(fake))
        sent = json.dumps(fake.message_requests[-1]["messages"])
        bad, _, err = run(["-p", "x", "--workspace", str(ws), "--resume", "20990101T000000-ffffff"], env_for(fake))
    assert code == 0 and json.loads(out3)["session_id"] == sid != json.loads(out2)["session_id"]
    assert "first session" in sent and "second session" not in sent
    assert bad == 2 and "20990101T000000-ffffff" in err


def _spawn(argv, env, cwd):
    full_env = {**{k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CTXTUI_"))}, **env}
    return subprocess.Popen([sys.executable, "-m", "app.cli", "--headless", *argv], cwd=str(ROOT), env=full_env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _state(ws: Path) -> Path:
    """The workspace's state folder under the isolated state root (conftest's CTXTUI_HOME)."""
    return project_state_dir(state_root(), ws.resolve())


def _entries_logged(ws: Path) -> int:
    info = latest_session(_state(ws))
    return 0 if info is None else len(load_session(info.path).all_entries)


@pytest.mark.slow
@pytest.mark.parametrize("sig,expected", [(signal.SIGINT, 130), (signal.SIGKILL, -9)], ids=["sigint", "sigkill"])
def test_killed_mid_turn_then_resumed(tmp_path, sig, expected):
    ws = make_workspace(tmp_path)
    script = [reply("step", tool_use("read_file", {"path": "README.md"})),
              reply("step2", tool_use("glob", {"pattern": "*"})),
              reply("slow " * 400, chunk=4, delay=0.05)]
    with FakeAnthropic(script, responder=echo_responder) as fake:
        proc = _spawn(["-p", "work", "--workspace", str(ws)], env_for(fake), ws)
        try:
            assert wait_for(lambda: len(fake.message_requests) >= 3), proc.stderr.read() if proc.poll() else ""
            assert wait_for(lambda: _entries_logged(ws) >= 5)
            time.sleep(0.2)
            proc.send_signal(sig)
            code = proc.wait(timeout=20)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert code == expected
        loaded = load_session(latest_session(_state(ws)).path)
        assert len(loaded.all_entries) >= 5
        assert validate_history(project(loaded.entries)) == []
        code, out, _ = run(["-p", "go on", "--workspace", str(ws), "--continue", "--output-format", "json"],
                           env_for(fake))
        assert code == 0
        resumed = fake.message_requests[-1]["messages"]
        assert "work" in json.dumps(resumed[0]) and len(resumed) >= 5


def test_headless_never_imports_textual(tmp_path):
    ws = make_workspace(tmp_path)
    code = ("import sys, runpy\n"
            "sys.argv = ['ctxtui', '--headless', '-p', 'hi', '--workspace', sys.argv[1], '--output-format', 'json']\n"
            "from app.cli.main import main\n"
            "rc = main()\n"
            "assert 'textual' not in sys.modules, 'textual was imported'\n"
            "assert 'rich' not in sys.modules, 'rich was imported'\n"
            "assert 'mcp' not in sys.modules, 'the mcp SDK was imported with no server named'\n"
            "sys.exit(rc)\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CTXTUI_"))}
    proc = subprocess.run([sys.executable, "-c", code, str(ws)], cwd=str(ROOT), env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[-1])["stop_reason"] == "end_turn"


def test_demo_model_explores_and_compacts_offline(tmp_path):
    """The README's example: no key, a small window, stream-json shows every kind of event."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CTXTUI_"))}
    env.update({"CTXTUI_CONTEXT_WINDOW": "8000", "CTXTUI_HOME": str(tmp_path)})
    proc = subprocess.run([sys.executable, "-m", "app.cli", "--headless", "-p", "explore this repository",
                           "--output-format", "stream-json"], cwd=str(ROOT), env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    types = [json.loads(line)["type"] for line in proc.stdout.splitlines()]
    for t in ("context", "compaction", "cost", "result"):
        assert t in types, (t, set(types))
    assert list(Path(tmp_path, "projects").glob("*/sessions/*.jsonl"))


def test_continue_compact_compacts_the_session_and_exits_0(tmp_path):
    """Issue 12, problem 6: a script recovers a full session (or one whose breaker stopped
    auto-compaction) with `--continue --compact [FOCUS]`: the compaction is printed like a run's,
    no prompt is sent, and the next prompt fits where it would not have before."""
    ws = make_workspace(tmp_path)

    def responder(body):
        if is_summary_request(body):
            return echo_responder(body)
        return reply("noted: " + "details " * 1500)

    base = ["--workspace", str(ws)]
    with FakeAnthropic(responder=responder) as fake:
        env = env_for(fake)
        for k in range(4):
            assert run(["-p", f"step {k}", *base, *(["--continue"] if k else [])], env)[0] == 0
        n = len(fake.message_requests)
        code, out, err = run(["--continue", "--compact", "the plan", *base, "--output-format", "stream-json"], env)
        lines = [json.loads(line) for line in out.splitlines()]
        comps = [d for d in lines if d["type"] == "compaction"]
        assert code == 0, err
        assert comps and comps[-1]["trigger"] == "manual" and comps[-1]["tokens_after"] < comps[-1]["tokens_before"]
        assert comps[-1]["tokens_before"] > 10_620                  # over the blocking limit of a 12,000 window
        assert lines[-1]["type"] == "result" and lines[-1]["stop_reason"] == "compacted" and not lines[-1]["is_error"]
        assert all(is_summary_request(r) for r in fake.message_requests[n:])   # no prompt was sent
        code, _, err = run(["--continue", "--compact", *base], env)      # nothing left to shrink: an error
        assert code == 1 and "[done] not_compacted" in err and "--continue --compact" not in err
        code, _, err = run(["-p", "go on", "--continue", *base, "--context-window", "12000",
                            "--disable-autocompact"], env)
        assert code == 0 and "blocking" not in err and "[compaction]" not in err, err
    assert all(r.status == 200 for r in fake.requests)


def test_compact_needs_a_session_and_no_prompt(tmp_path):
    ws = make_workspace(tmp_path)
    env = {**user_dirs(), "ANTHROPIC_API_KEY": SECRET}
    code, _, err = run(["--compact", "--workspace", str(ws)], env)
    assert code == 2 and "--continue" in err and "--resume" in err
    code, _, err = run(["--compact", "--continue", "-p", "hi", "--workspace", str(ws)], env)
    assert code == 2 and "no prompt" in err
    with pytest.raises(SystemExit) as exit_:
        cli_main(["--compact"])                 # the TUI has /compact instead
    assert exit_.value.code == 2


@pytest.mark.parametrize("ttl", ["5m", "1h"])
def test_context_events_carry_the_next_request_s_price(tmp_path, ttl):
    """Before the first response nothing is cached; after it, the response's prefix is read and the
    rest written at the TTL's rate, and the cache has the TTL left (issue 27, `next_request`)."""
    from agent_core.pricing.cost import price_buckets
    ws = make_workspace(tmp_path)
    with FakeAnthropic([reply(tool_use("glob", {"pattern": "*"})), reply("done")]) as fake:
        code, out, _ = run(["-p", "go", "--workspace", str(ws), "--output-format", "stream-json"],
                           {**env_for(fake), "CTXTUI_CACHE_TTL": ttl})
    assert code == 0
    contexts = [d for d in map(json.loads, out.splitlines()) if d["type"] == "context"]
    first, last = contexts[0]["next_request"], contexts[-1]["next_request"]
    assert set(first) == {"tokens", "cached_tokens", "uncached_tokens", "usd_if_warm", "usd_if_cold",
                          "cache_expires_in_s"}
    assert first["cached_tokens"] == 0 and first["cache_expires_in_s"] is None
    assert first["usd_if_warm"] == first["usd_if_cold"]
    write = f"cache_write_{ttl}"
    for d in (c["next_request"] for c in contexts):
        assert d["tokens"] == d["cached_tokens"] + d["uncached_tokens"]
        assert d["usd_if_cold"] == pytest.approx(price_buckets(MODEL, {write: d["tokens"]}), abs=2e-6)
    assert last["cached_tokens"] > 1_000 and last["uncached_tokens"] < 100
    assert last["cache_expires_in_s"] == pytest.approx({"5m": 300, "1h": 3600}[ttl], abs=5)
    assert last["usd_if_warm"] == pytest.approx(
        price_buckets(MODEL, {"cache_read": last["cached_tokens"], write: last["uncached_tokens"]}), abs=2e-6)
    assert last["usd_if_warm"] < last["usd_if_cold"] / 5
    with FakeAnthropic([reply("answer text")]) as fake:
        code, out, _ = run(["-p", "q", "--workspace", str(ws), "--output-format", "json"], env_for(fake))
    (obj,) = [json.loads(line) for line in out.splitlines()]
    assert obj["context"]["next_request"]["cached_tokens"] > 1_000
