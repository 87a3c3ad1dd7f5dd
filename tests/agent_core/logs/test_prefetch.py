"""Logs read by worker processes (agent_core/logs/prefetch.py) add up to what one process reading
them in turn adds up: every report, over logs that repeat each other's responses (sub-agent logs,
progress copies, a resumed session), compactions, corrupt lines, a ctxtui log, a FIFO, an empty
file; and a worker that dies mid-run loses nothing."""
from __future__ import annotations

import os

import pytest

from agent_core.logs import prefetch
from agent_core.logs.reader import LogReader
from agent_core.usage import report_cache
from agent_core.sessions.session_log import SessionLog
from compaction.entry import assistant as a_entry
from tests.app.cli.usage_helpers import run
from tests.log_helpers import MODEL, assistant, boundary, progress, usage, user, write_log


def _tree(root):
    big = "word " * 4000
    for s in range(5):
        sid = f"sess-{s}"
        recs = [user(big, session=sid, uuid=f"u{s}")]
        for i in range(30):
            ts = f"2025-06-{10 + s:02d}T{i % 24:02d}:00:00Z"
            first_read = 1007 if i == 13 else 1000          # after the compaction: the first copy's context counts
            recs.append(assistant(f"m{s}-{i}", f"r{s}-{i}", session=sid, ts=ts,
                                  u=usage(inp=100 + i, out=5, read=first_read)))
            recs.append(assistant(f"m{s}-{i}", f"r{s}-{i}", session=sid, ts=ts, block="tool_use",
                                  u=usage(inp=100 + i, out=50 + i, read=1000)))
            if i == 12:
                recs += [boundary(90_000, session=sid, uuid=f"b{s}"), user("summary", session=sid, uuid=f"cs{s}",
                                                                             isCompactSummary=True)]
            if i == 20:
                recs.append(progress(assistant(f"sub{s}", f"rs{s}", session=sid, sidechain=True,
                                               u=usage(inp=7, out=3)), session=sid, uuid=f"p{s}"))
        write_log(root / f"-home-me-p{s % 2}" / f"{sid}.jsonl", recs,
                  tail='{"type":"assistant","message":{"usage":{"input_tokens":NaN}}}\n{"cut')
        sub = [assistant(f"sub{s}", f"rs{s}", session=sid, sidechain=True, u=usage(inp=7, out=9)),
               assistant(f"sub{s}", f"rs{s}", session=sid, sidechain=True, u=usage(inp=7, out=12), block="tool_use"),
               assistant(f"m{s}-3", f"r{s}-3", session=sid, sidechain=True, u=usage(inp=103, out=8, read=1000))]
        write_log(root / f"-home-me-p{s % 2}" / sid / "subagents" / "agent-a.jsonl", sub)
    # a resumed session: a copy of sess-0's first responses, then its own
    write_log(root / "-home-me-p0" / "sess-9.jsonl",
              [assistant("m0-1", "r0-1", session="sess-0", u=usage(inp=101, out=51, read=1000)),
               assistant("m0-2", "r0-2", session="sess-0", u=usage(inp=102, out=1, read=1000)),
               assistant("m0-2", "r0-2", session="sess-0", u=usage(inp=102, out=60, read=1000), block="tool_use"),
               assistant("m0-2", "r0-2", session="sess-0", u=usage(inp=102, out=60, read=1000), block="thinking"),
               # back to what stands for it already, on another day: the last copy is the one that counts
               assistant("m0-4", "r0-4", session="sess-0", u=usage(inp=104, out=60, read=1000)),
               assistant("m0-4", "r0-4", session="sess-0", u=usage(inp=104, out=54, read=1000), block="tool_use",
                         ts="2025-06-20T10:00:00Z"),
               assistant("m9", "r9", session="sess-9", u=usage(inp=5, out=5))])
    (root / "-home-me-p1" / "empty.jsonl").write_text("")
    os.mkfifo(root / "-home-me-p1" / "pipe.jsonl")
    state = root / "-home-me-ctx"
    log = SessionLog.create(state, {"model": MODEL}, session_id="20250614T100000-abcdef")
    log.append_entry(a_entry("hi", response_id="msg_a", usage=usage(inp=10, out=5), model=MODEL))
    log.close()


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "projects"
    _tree(root)
    return root


def _report(tmp_path, monkeypatch, min_bytes, *argv):
    """The report, cold. With no workers (min_bytes huge) every log goes through the line-by-line
    `LogReader`, each copy of a response applied: the reference the scan and its shortcuts must meet."""
    with monkeypatch.context() as m:
        m.setenv("CTXTUI_HOME", str(tmp_path / f"home-{len(list(tmp_path.glob('home-*')))}"))   # cold every time
        m.setattr(prefetch, "MIN_BYTES", min_bytes)
        if min_bytes > 1 << 40:
            m.setattr(report_cache, "whole_log", lambda path, dedup, loads=None: LogReader(path, dedup=dedup))
        return run(*argv, "--json")


@pytest.mark.parametrize("report", ["daily", "session", "monthly", "blocks"])
def test_workers_add_up_to_what_one_process_adds_up(tree, tmp_path, monkeypatch, report):
    started = []
    real = prefetch.Prefetch.__init__

    def spying(self, files, sizes, workers):
        started.append(workers)
        real(self, files, sizes, workers)

    monkeypatch.setattr(prefetch.Prefetch, "__init__", spying)
    now = ["--now", "2025-06-16T12:00:00Z"] if report == "blocks" else []
    serial = _report(tmp_path, monkeypatch, 1 << 60, report, str(tree), *now)
    assert started == []
    parallel = _report(tmp_path, monkeypatch, 0, report, str(tree), *now)
    assert started and started[0] >= 2 or (os.cpu_count() or 1) < 2
    assert parallel == serial
    assert serial[0] == 0 and '"cost_usd"' in serial[1] and "could not read" in serial[2]


def test_a_worker_that_dies_loses_nothing(tree, tmp_path, monkeypatch):
    serial = _report(tmp_path, monkeypatch, 1 << 60, "session", str(tree))
    real = prefetch.log_facts
    calls = []
    marks = tmp_path / "died"

    def dying(path, *args):
        calls.append(path)
        if len(calls) == 2:
            marks.open("a").write(f"{path}\n")     # seen from the test: the worker got this far
            os._exit(3)             # the worker's process ends here, its pipe with it
        return real(path, *args)

    monkeypatch.setattr(prefetch, "log_facts", dying)     # forked workers run this copy
    assert _report(tmp_path, monkeypatch, 0, "session", str(tree)) == serial
    assert marks.read_text().count("\n") >= 1


def test_a_worker_sends_the_facts_of_a_claude_code_log_and_passes_on_the_rest(tree):
    facts = prefetch.log_facts(tree / "-home-me-p0" / "sess-0.jsonl")
    assert facts[0] == "claude_code" and len(facts[1]) > 30 and facts[3] >= 1     # the cut-off last line
    ctx = next((tree / "-home-me-ctx").rglob("*.jsonl"))
    assert prefetch.log_facts(ctx) == ("other",)
    assert prefetch.log_facts(tree / "-home-me-p1" / "pipe.jsonl") == ("other",)
    assert prefetch.log_facts(tree / "missing.jsonl") == ("other",)     # read in-process: it says what is wrong


def test_small_reads_and_one_core_use_no_worker(tree, monkeypatch):
    files = sorted(tree.rglob("*.jsonl"))
    assert prefetch.start(files) is None                    # a few hundred KB: not worth a fork
    monkeypatch.setattr(prefetch, "MIN_BYTES", 0)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    assert prefetch.start(files) is None


@pytest.mark.parametrize("how", ["SIGINT", "SIGKILL"])
def test_ctrl_c_or_a_kill_while_workers_read_ends_every_worker(tmp_path, how):
    """SIGINT while workers read: exit 130 with one line (no traceback); SIGKILL: the workers end
    with the reading process. No worker is left behind either way."""
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    root = tmp_path / "projects"
    filler = _json_line(user("x" * 200_000))
    for s in range(4):                      # 4 x 2.4 MB: past MIN_BYTES, so workers start
        write_log(root / "-p" / f"s{s}.jsonl",
                  [filler] * 12 + [assistant(f"m{s}-{i}", f"r{s}-{i}", session=f"s{s}") for i in range(2000)])
    env = {**os.environ, "CTXTUI_HOME": str(tmp_path / "home")}
    p = subprocess.Popen([sys.executable, "-m", "app.cli", "usage", "daily", str(root), "--json"],
                         cwd=Path(__file__).resolve().parents[3], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and p.poll() is None:
        kids = subprocess.run(["pgrep", "-P", str(p.pid)], capture_output=True, text=True).stdout.split()
        if kids:
            break
        time.sleep(0.005)
    else:
        pytest.skip("the run ended before a worker was seen")
    p.send_signal(getattr(signal, how))
    _, err = p.communicate(timeout=30)
    if p.returncode == 0:
        pytest.skip("the run finished before the signal came")
    if how == "SIGINT":
        assert p.returncode == 130 and "interrupted" in err.decode() and "Traceback" not in err.decode()
    else:
        assert p.returncode == -9
    time.sleep(0.3)
    ps = subprocess.run(["ps", "-o", "pid=,stat=", "-g", str(p.pid)], capture_output=True, text=True).stdout
    running = [line.split()[0] for line in ps.splitlines() if not line.split()[1].startswith("Z")]
    assert running == []            # an orphan ended by its death signal may wait as a zombie for init to reap it


def _json_line(rec):
    import json
    return json.dumps(rec)


# ---- one big log read in two halves (split_scan) --------------------------------------------------

def _big_log(path, responses=400):
    recs = [user("word " * 300, session="s1", uuid="u0")]
    for i in range(responses):
        recs.append(assistant(f"m{i}", f"r{i}", session="s1", u=usage(inp=100 + i, out=5)))
        recs.append(assistant(f"m{i}", f"r{i}", session="s1", block="tool_use", u=usage(inp=100 + i, out=50 + i)))
        if i % 50 == 7:
            recs += ['{"type":"assistant","message":{"usage":{"input_tokens":NaN}}}', "not json",
                     boundary(90_000, session="s1", uuid=f"b{i}")]
    return write_log(path, recs, tail='{"type":"assistant","cut')


@pytest.mark.parametrize("final", [True, False])
def test_one_big_log_read_in_two_halves_is_one_scan(tmp_path, monkeypatch, final):
    log = _big_log(tmp_path / "s1.jsonl")
    monkeypatch.setattr(prefetch, "SPLIT_BYTES", 1)
    forks = []
    real = prefetch._fork
    monkeypatch.setattr(prefetch, "_fork", lambda jobs, share, pids: forks.append(jobs) or real(jobs, share, pids))
    got = prefetch.split_scan(log, final=final)
    if (os.cpu_count() or 1) < 2:
        assert got is None
        return
    want = prefetch.scan_facts(log, final=final)
    assert len(forks) == 1 and 0 < forks[0][0][1] < log.stat().st_size       # a worker read from the middle on
    anonymous = [(n, f) for n, f in want[1] if f[1].startswith("uuid:#")]     # no ids: a name made per read
    assert anonymous and len(got[1]) == len(want[1])
    assert [(n, f[2:]) for n, f in got[1]] == [(n, f[2:]) for n, f in want[1]]
    assert [f[1] for _, f in got[1] if not f[1].startswith("uuid:#")] == \
        [f[1] for _, f in want[1] if not f[1].startswith("uuid:#")]
    assert got[0] == want[0] == "claude_code" and got[2:] == want[2:] and got[3] >= 8


def test_a_failed_half_or_a_log_not_known_from_its_first_half_is_scanned_as_usual(tmp_path, monkeypatch):
    monkeypatch.setattr(prefetch, "SPLIT_BYTES", 1)
    log = _big_log(tmp_path / "s1.jsonl")
    real = prefetch.log_facts
    monkeypatch.setattr(prefetch, "log_facts", lambda *a: os._exit(3))       # the worker dies
    assert prefetch.split_scan(log) is None
    monkeypatch.setattr(prefetch, "log_facts", real)
    plain = write_log(tmp_path / "plain.jsonl", ["not json"] * 2000 + [_json_line(assistant("m1", "r1"))] * 5)
    assert prefetch.split_scan(plain) is None           # no record in the first half: its format is not known
    assert prefetch.split_scan(tmp_path / "missing.jsonl") is None


def test_a_report_over_one_big_log_reads_it_in_two_halves(tmp_path, monkeypatch):
    log = _big_log(tmp_path / "p" / "s1.jsonl")
    serial = _report(tmp_path, monkeypatch, 1 << 60, "session", str(log))
    halves = []
    real = prefetch.split_scan
    monkeypatch.setattr(prefetch, "split_scan", lambda *a, **k: halves.append(a[0]) or real(*a, **k))
    monkeypatch.setattr(prefetch, "SPLIT_BYTES", 1)
    assert _report(tmp_path, monkeypatch, 0, "session", str(log)) == serial
    assert halves == [log] or (os.cpu_count() or 1) < 2
