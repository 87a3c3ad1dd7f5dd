"""`ctxtui replay` through the CLI entry point: the JSON schema, bad arguments, a corrupt line."""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from app.cli import replay as replay_cli
from app.cli.main import main
from agent_core.replay.options import make_options
from agent_core.replay.runner import run_replay
from agent_core.replay.synthetic import generate

POLICY_KEYS = {"cost_usd", "cost_by_bucket", "overflows", "compactions", "cache_hit_rate", "user_messages_kept",
               "user_messages_total", "references_kept", "references_total", "content_kept", "content_total",
               "rereads", "reread_usd", "net_cost_usd", "series"}
BUCKETS = {"input", "output", "cache_write_5m", "cache_write_1h", "cache_read"}


def usage(read=0, write=0, out=10):
    return {"input_tokens": 3, "output_tokens": out, "cache_read_input_tokens": read,
            "cache_creation_input_tokens": write,
            "cache_creation": {"ephemeral_5m_input_tokens": write, "ephemeral_1h_input_tokens": 0}}


def cc_log(path: Path, corrupt: bool = False) -> Path:
    """A small Claude Code log: a prompt, a Read, a text answer."""
    lines = [
        {"type": "user", "sessionId": "s1", "timestamp": "2026-02-11T20:00:00Z", "uuid": "u1",
         "message": {"role": "user", "content": "fix the parser in lib/parser.py"}},
        {"type": "assistant", "sessionId": "s1", "requestId": "q1", "timestamp": "2026-02-11T20:00:03Z", "uuid": "a1",
         "message": {"id": "m1", "model": "claude-sonnet-4-5", "role": "assistant", "usage": usage(0, 9_000, 50),
                     "content": [{"type": "tool_use", "id": "t1", "name": "Read",
                                  "input": {"file_path": "lib/parser.py"}}]}},
        {"type": "user", "sessionId": "s1", "timestamp": "2026-02-11T20:00:04Z", "uuid": "u2",
         "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                                  "content": "def parse(): pass\n" * 100}]}},
        {"type": "assistant", "sessionId": "s1", "requestId": "q2", "timestamp": "2026-02-11T20:00:09Z", "uuid": "a2",
         "message": {"id": "m2", "model": "claude-sonnet-4-5", "role": "assistant", "usage": usage(9_000, 700, 20),
                     "content": [{"type": "text", "text": "Fixed."}]}},
    ]
    text = [json.dumps(x) for x in lines]
    if corrupt:
        text.insert(2, '{"type": "user", "message": {broken')
    path.write_text("\n".join(text) + "\n")
    return path


def check_schema(report: dict, names=("none", "cc", "ctxtui")) -> None:
    assert set(report) >= {"sessions", "totals", "window", "ttl", "limits"}
    assert report["limits"] and all(isinstance(x, str) for x in report["limits"])
    for s in report["sessions"]:
        assert set(s) >= {"path", "model", "requests", "validation", "policies"}
        assert {"cache_read_error_pct", "cache_write_error_pct"} <= set(s["validation"])
        assert set(s["policies"]) >= set(names)
        for p in s["policies"].values():
            assert set(p) >= POLICY_KEYS
            assert set(p["cost_by_bucket"]) == BUCKETS
            assert set(p["series"]) == {"context", "cost_cum", "markers"}
            assert len(p["series"]["context"]) == len(p["series"]["cost_cum"]) == s["requests"]
            assert p["series"]["cost_cum"][-1] == pytest.approx(p["cost_usd"], abs=1e-5)
            assert all(len(m) == 2 and isinstance(m[0], int) and isinstance(m[1], str)
                       for m in p["series"]["markers"])
            assert 0.0 <= p["cache_hit_rate"] <= 1.0
            assert 0 <= p["content_kept"] <= p["content_total"] and p["rereads"] <= p["content_total"]
            assert p["net_cost_usd"] == pytest.approx(p["cost_usd"] + p["reread_usd"], abs=1e-6)
    for n in names:
        assert set(report["totals"][n]) == {"cost_usd", "overflows", "net_cost_usd"}
        assert report["totals"][n]["cost_usd"] == pytest.approx(
            sum(s["policies"][n]["cost_usd"] for s in report["sessions"]), abs=1e-5)
        assert report["totals"][n]["net_cost_usd"] == pytest.approx(
            sum(s["policies"][n]["cost_usd"] + s["policies"][n]["reread_usd"] for s in report["sessions"]), abs=1e-5)


def test_json_schema_on_a_generated_session(tmp_path):
    options = make_options([str(tmp_path)], ["nocollapse:CTXTUI_DISABLE_COLLAPSE=1"], window=40_000)
    seen = []
    report = run_replay(options, lambda label, f: seen.append(f), trajectories=[generate(150, seed=9)]).to_json()
    check_schema(report, ("none", "cc", "ctxtui", "nocollapse"))
    assert report["window"] == 40_000 and report["ttl"] == "5m"
    none = report["sessions"][0]["policies"]["none"]
    assert none["overflows"] > 0 and report["totals"]["cc"]["overflows"] == 0
    assert seen[-1] == 1.0 and seen == sorted(seen)


def test_json_through_the_cli_counts_a_corrupt_line(tmp_path, capsys):
    log = cc_log(tmp_path / "s1.jsonl", corrupt=True)
    assert main(["replay", str(log), "--json", "--window", "50000"]) == 0
    report = json.loads(capsys.readouterr().out)
    check_schema(report)
    (s,) = report["sessions"]
    assert s["requests"] == 2 and s["skipped_lines"] == 1
    assert any("unreadable" in x for x in report["limits"])


def test_text_report_fits_in_100_columns(tmp_path, capsys):
    log = cc_log(tmp_path / "s1.jsonl")
    assert main(["replay", str(log), "--window", "50000", "--policy", "one-h:CTXTUI_DISABLE_COLLAPSE=1"]) == 0
    out = capsys.readouterr().out
    assert "one-h" in out and "limits:" in out
    assert max(len(line) for line in out.splitlines()) < 100


@pytest.mark.parametrize("args, names", [
    (["--window", "10"], "--window"),
    (["--ttl", "2h"], "--ttl"),
    (["--policy", "bogus"], "bogus"),
    (["--policy", "x:CTXTUI_THEME=dark"], "CTXTUI_THEME"),
    (["--policy", "x:CTXTUI_DISABLE_COLLAPSE=maybe"], "CTXTUI_DISABLE_COLLAPSE"),
    (["--policy", "x:"], "KEY=VALUE"),
    (["--policy", "cc:CTXTUI_DISABLE_COLLAPSE=1"], "own name"),
])
def test_bad_arguments_exit_2_naming_the_problem(tmp_path, capsys, args, names):
    log = cc_log(tmp_path / "s1.jsonl")
    assert main(["replay", str(log), *args]) == 2
    assert names in capsys.readouterr().err


def test_a_malformed_number_exits_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as caught:
        main(["replay", str(cc_log(tmp_path / "s1.jsonl")), "--window", "many"])
    assert caught.value.code == 2 and "--window" in capsys.readouterr().err


def test_a_missing_path_exits_2(tmp_path, capsys):
    assert main(["replay", str(tmp_path / "nope.jsonl")]) == 2
    assert "nope.jsonl" in capsys.readouterr().err



# ----- progress: stderr only, and only when it is a terminal and the work is long -------------------
class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_goes_to_a_terminal_stderr_never_into_the_json(tmp_path, monkeypatch):
    from agent_core.replay import runner
    from agent_core.replay.synthetic_log import write_claude_code_log
    monkeypatch.setattr(runner, "PROGRESS_INTERVAL", 0.0)
    real = replay_cli.StderrProgress
    monkeypatch.setattr(replay_cli, "StderrProgress", lambda err: real(err, delay=0, interval=0))
    log = tmp_path / "long.jsonl"
    n = write_claude_code_log(log, requests=40).requests
    out, err = io.StringIO(), Terminal()
    assert replay_cli.run(make_options([str(log)], json=True), out, err) == 0
    report = json.loads(out.getvalue())                       # stdout is the one JSON object, nothing else
    assert out.getvalue().count("\n") == 1 and "\r" not in out.getvalue()
    check_schema(report)
    shown = err.getvalue()
    assert "reading " in shown and f"policy 4 of 4 (ctxtui) · request {n:,} of {n:,}" in shown
    assert shown.endswith("\r" + " " * real.WIDTH + "\r")     # the line is wiped
    assert all(len(line) <= real.WIDTH for line in shown.split("\r"))


def test_progress_waits_a_second_then_is_rate_bounded():
    now = [0.0]
    err = Terminal()
    progress = replay_cli.StderrProgress(err, delay=1.0, interval=0.2, clock=lambda: now[0])
    for t, label in ((0.5, "early"), (1.1, "first"), (1.2, "too soon"), (1.35, "second")):
        now[0] = t
        progress(label, 0.5)
    assert "early" not in err.getvalue() and "too soon" not in err.getvalue()
    assert "first" in err.getvalue() and "second" in err.getvalue()
    quiet = Terminal()
    progress = replay_cli.StderrProgress(quiet, clock=lambda: 0.3)
    progress("quick", 0.9)
    progress.clear()
    assert quiet.getvalue() == ""                             # a quick replay leaves stderr alone


def test_no_progress_off_a_terminal(tmp_path):
    out, err = io.StringIO(), io.StringIO()
    assert replay_cli.run(make_options([str(cc_log(tmp_path / "s1.jsonl"))], json=True), out, err) == 0
    assert err.getvalue() == "" and json.loads(out.getvalue())["sessions"]


@pytest.mark.slow
def test_a_terminal_stderr_and_piped_json_through_a_real_process(tmp_path):
    """`ctxtui replay LOG --json > file` in a terminal: stderr (a pty) shows progress once the
    replay has run a second; stdout is exactly the report. 1,500 requests take 3-4 s here: 500
    took about a second, and on a quiet machine less, so no progress was due (a flaky test)."""
    import os
    import pty
    import subprocess
    import sys
    import threading
    from agent_core.replay.synthetic_log import write_claude_code_log
    log = tmp_path / "long.jsonl"
    write_claude_code_log(log, requests=1_500)
    master, slave = pty.openpty()
    root = Path(__file__).resolve().parents[2]
    chunks: list[bytes] = []

    def read_terminal() -> None:      # while the replay runs: a full pty would hold its writes
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                return
            if not chunk:
                return
            chunks.append(chunk)

    reader = threading.Thread(target=read_terminal, daemon=True)
    reader.start()
    try:
        res = subprocess.run([sys.executable, "-m", "app.cli.main", "replay", str(log), "--json"], cwd=root,
                             stdout=subprocess.PIPE, stderr=slave, timeout=300)
        os.close(slave)
        reader.join(timeout=30)
    finally:
        os.close(master)
    shown = b"".join(chunks)
    assert res.returncode == 0
    report = json.loads(res.stdout)
    check_schema(report)
    assert b"policy" in shown and b"request" in shown                 # on the terminal, not in the JSON
