"""Issue 21, part 6: a `*.jsonl` that is a symlink to /dev/zero, a FIFO or a symlink loop, in a
folder given to `ctxtui replay`, `ctxtui usage` or `ctxtui watch`. It is skipped with a message
naming it, the other logs still make the report, and when nothing is left the command says so and
exits 2 (a set-up error) — never a hang, never a traceback.

Each runs the real CLI entry (`app.cli.main.main`, and once `python -m app.cli` in a subprocess)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_core.watch.target import first_log, resolve_target
from app.cli.main import main

ROOT = Path(__file__).resolve().parents[3]
KINDS = ("dev-zero", "fifo", "symlink-loop")
REASONS = {"dev-zero": "not a regular file (a character device)", "fifo": "not a regular file (a FIFO",
           "symlink-loop": "Too many levels of symbolic links"}


def hostile(folder: Path, kind: str, name: str = "bad.jsonl") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    if kind == "dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to(name)          # points at itself
    return path


def _usage(read: int = 0, write: int = 0, out: int = 10) -> dict:
    return {"input_tokens": 3, "output_tokens": out, "cache_read_input_tokens": read,
            "cache_creation_input_tokens": write,
            "cache_creation": {"ephemeral_5m_input_tokens": write, "ephemeral_1h_input_tokens": 0}}


def good_log(path: Path) -> Path:
    """A small Claude Code log with two model requests."""
    lines = [
        {"type": "user", "sessionId": "s1", "timestamp": "2026-02-11T20:00:00Z", "uuid": "u1",
         "message": {"role": "user", "content": "hello"}},
        {"type": "assistant", "sessionId": "s1", "requestId": "q1", "timestamp": "2026-02-11T20:00:03Z", "uuid": "a1",
         "message": {"id": "m1", "model": "claude-sonnet-4-5", "role": "assistant", "usage": _usage(0, 9_000, 50),
                     "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "a.py"}}]}},
        {"type": "user", "sessionId": "s1", "timestamp": "2026-02-11T20:00:04Z", "uuid": "u2",
         "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x\n" * 50}]}},
        {"type": "assistant", "sessionId": "s1", "requestId": "q2", "timestamp": "2026-02-11T20:00:09Z", "uuid": "a2",
         "message": {"id": "m2", "model": "claude-sonnet-4-5", "role": "assistant", "usage": _usage(9_000, 700, 20),
                     "content": [{"type": "text", "text": "Done."}]}},
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


# ---- ctxtui replay ----------------------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
def test_replay_of_a_folder_holding_only_a_hostile_file_exits_2_saying_why(tmp_path, capsys, kind):
    bad = hostile(tmp_path / "logs", kind)
    assert main(["replay", str(tmp_path / "logs")]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert f"ctxtui replay: skipped {bad}: {REASONS[kind]}" in err
    assert "nothing to replay" in err and "could not be read" in err
    assert "Traceback" not in err and "Errno" not in err


@pytest.mark.parametrize("kind", KINDS)
def test_replay_skips_a_hostile_file_and_reports_the_rest(tmp_path, capsys, kind):
    bad = hostile(tmp_path / "logs", kind, "a-bad.jsonl")        # sorted first: read before the good one
    good = good_log(tmp_path / "logs" / "s1.jsonl")
    assert main(["replay", str(tmp_path / "logs"), "--window", "50000"]) == 0
    out, err = capsys.readouterr()
    assert f"ctxtui replay: skipped {bad}: {REASONS[kind]}" in err
    assert str(good) in out and "totals:" in out and "limits:" in out
    assert f"a-bad.jsonl: not read ({REASONS[kind]}" in " ".join(out.split())     # in the notes too


@pytest.mark.parametrize("kind", KINDS)
def test_replay_json_lists_the_skipped_file(tmp_path, capsys, kind):
    bad = hostile(tmp_path / "logs", kind, "a-bad.jsonl")
    good_log(tmp_path / "logs" / "s1.jsonl")
    assert main(["replay", str(tmp_path / "logs"), "--window", "50000", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert len(report["sessions"]) == 1
    assert report["skipped_files"] == [{"path": str(bad), "reason": report["skipped_files"][0]["reason"]}]
    assert report["skipped_files"][0]["reason"].startswith(REASONS[kind])


@pytest.mark.slow
def test_replay_in_a_subprocess_neither_hangs_on_a_fifo_nor_prints_a_traceback(tmp_path):
    for kind in KINDS:
        hostile(tmp_path / kind, kind)
    good_log(tmp_path / "mixed" / "s1.jsonl")
    hostile(tmp_path / "mixed", "fifo", "a-fifo.jsonl")
    for folder, code in (("fifo", 2), ("dev-zero", 2), ("symlink-loop", 2), ("mixed", 0)):
        r = subprocess.run([sys.executable, "-m", "app.cli", "replay", str(tmp_path / folder), "--window", "50000"],
                           cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
        assert r.returncode == code, (folder, r.stderr)
        assert "Traceback" not in r.stderr and "skipped" in r.stderr
        assert ("totals:" in r.stdout) == (code == 0)


# ---- ctxtui usage -----------------------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
def test_usage_of_a_folder_holding_only_a_hostile_file_says_it_was_skipped(tmp_path, capsys, kind):
    bad = hostile(tmp_path / "projects" / "p", kind)
    assert main(["usage", "daily", str(tmp_path / "projects")]) == 0
    out, err = capsys.readouterr()
    assert f"could not read {bad}: {REASONS[kind]}" in err
    assert "no readable session logs (*.jsonl) under the given paths (1 skipped" in out


@pytest.mark.parametrize("kind", KINDS)
def test_usage_skips_a_hostile_file_and_counts_the_rest(tmp_path, capsys, kind):
    hostile(tmp_path / "projects" / "p", kind, "a-bad.jsonl")
    good_log(tmp_path / "projects" / "p" / "s1.jsonl")
    assert main(["usage", str(tmp_path / "projects"), "--json"]) == 0
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert data["files"] == 1 and data["totals"]["requests"] == 2
    assert "could not read" in err and "Traceback" not in err


# ---- ctxtui watch's discovery -----------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
def test_watch_waits_past_a_hostile_file_and_picks_the_real_log(tmp_path, kind):
    folder = tmp_path / "projects" / "p"
    hostile(folder, kind, "z-bad.jsonl")      # sorted last, and the newest
    target = resolve_target(str(folder), cwd=tmp_path, env={"CLAUDE_CONFIG_DIR": str(tmp_path / "cc")})
    assert target.log is None and first_log(target) is None               # nothing to follow yet
    good = good_log(folder / "s1.jsonl")
    assert first_log(target).log == good.resolve()
    target = resolve_target(str(folder), cwd=tmp_path, env={"CLAUDE_CONFIG_DIR": str(tmp_path / "cc")})
    assert target.log == good.resolve()


@pytest.mark.parametrize("kind", KINDS)
def test_watch_of_a_hostile_file_exits_2_saying_why(tmp_path, capsys, kind):
    bad = hostile(tmp_path / "logs", kind)
    assert main(["watch", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"ctxtui watch: error: {bad}: ") and "Traceback" not in err
