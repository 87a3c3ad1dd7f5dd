"""Replay is linear in the log: no step costs the size of the whole session (issue 23).

What made it quadratic: an `asyncio.Runner` per engine step, which on Python 3.11 formats the repr
of the finished task's result (the whole `PipelineResult`); `none`'s context copied, hashed block
by block and scanned for references at every request; every prompt searched for in the whole
session's text at the end. The first tests pin each of those down; then the time of a replay of
2N requests against N in the same test, and (slow) a 250 MB generated Claude Code log in a child
process, its wall and CPU time and its peak RSS.
"""
from __future__ import annotations

import gc
import hashlib
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from compaction.pipeline import PipelineResult

from agent_core.logs.trajectory import Message, Request, Trajectory
from agent_core.pricing.pricer import Pricer
from agent_core.replay.options import make_options
from agent_core.replay.policies import NoCompaction
from agent_core.replay.references import ReferenceIndex
from agent_core.replay.runner import run_replay
from agent_core.replay.simulate import simulate
from agent_core.replay.synthetic import generate
from agent_core.replay.synthetic_log import write_claude_code_log

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def default_sigint():
    """Ctrl-C as a plain `ctxtui replay` has it (the test runner may have its own handler): then
    `asyncio.Runner.run` installs its own for each run and, checking it afterwards on 3.11,
    formats the finished task's repr."""
    before = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def test_an_engine_step_never_formats_the_pipeline_result(monkeypatch, default_sigint):
    """In the main thread with the default SIGINT handler, as the CLI runs: the result of a step
    (every entry of the history) is never formatted, and one event loop serves the whole run."""
    formatted = []                     # (a raising __repr__ would not do: asyncio's reprlib swallows it)
    monkeypatch.setattr(PipelineResult, "__repr__", lambda self: formatted.append(1) or "PipelineResult(...)")
    loops = []
    import asyncio
    new_loop = asyncio.new_event_loop
    monkeypatch.setattr(asyncio, "new_event_loop", lambda: loops.append(1) or new_loop())
    traj = generate(80, seed=3, overhead=3_000)
    report = run_replay(make_options([str(ROOT)], window=40_000), trajectories=[traj])
    assert sum(report.sessions[0].policies["ctxtui"].compactions.values()) > 0     # the engine did act
    assert formatted == []
    engines = [p for p in report.sessions[0].policies if p != "none"]   # cc, summary, ctxtui: the engine
    assert len(engines) == 3 and len(loops) <= len(engines)       # one loop for each policy's whole run


def test_none_hashes_each_message_once_not_the_context_per_request(monkeypatch):
    """The prefix digests of `none`'s ever-growing context are extended, not recomputed: blake2b
    runs about once per message, not once per message per request."""
    traj = generate(300, seed=5)
    messages = sum(len(r.added) for r in traj.requests)
    calls = []
    blake2b = hashlib.blake2b
    monkeypatch.setattr(hashlib, "blake2b", lambda *a, **k: calls.append(1) or blake2b(*a, **k))
    simulate(traj, NoCompaction("5m"), window=200_000, pricer=Pricer(), refs=ReferenceIndex(traj))
    assert len(calls) <= messages + 10


def test_user_prompts_kept_are_not_searched_for_in_the_whole_session():
    """Under `none` every prompt is still there as it was: counted without reading the text of the
    rest of the context (joining the session's text and searching it once per prompt was quadratic)."""
    class Unread:
        key = "not-a-prompt"

        @property
        def text(self):
            raise AssertionError("the context's text was read")
    traj = generate(200, seed=8)
    prompts = [m for r in traj.requests for m in r.added if m.kind == "prompt"]
    assert ReferenceIndex.verbatim(prompts, [*prompts, Unread()] * 3) == len(prompts) > 10
    run = simulate(traj, NoCompaction("5m"), window=200_000, pricer=Pricer(), refs=ReferenceIndex(traj))
    assert run.user_messages_kept == run.user_messages_total == len(prompts)


def chatty(n: int) -> Trajectory:
    """`n` requests of two small messages each (a long agentic run of quick tool calls), every
    answer naming a file no message holds: the shape where a per-request cost in the size of the
    context shows most. Small enough to stay under 200,000 tokens, where another price applies."""
    t = Trajectory("chatty.jsonl", "s", "claude-sonnet-4-5", overhead_tokens=2_000)
    previous: list[Message] = [Message("user", "prompt", 40, "p", "please run the checks")]
    for i in range(n):
        answer = Message("assistant", "assistant", 10, f"a{i}", f"step {i}", references=(f"missing_{i}.py",))
        t.requests.append(Request(i, 1_000.0 + 5 * i, t.model, previous, answer, {"output": 30}))
        previous = [answer, Message("user", "tool_result", 15, f"r{i}", f"result {i}")]
    return t


def _seconds(run, *args) -> float:
    """CPU time of one run with the collector off, as timeit measures: in the whole suite the
    heap holds every earlier test's objects, and a full collection during the bigger run (it
    allocates more, so it meets more of them) made 2N cost 2.8x N where the replay alone is linear."""
    gc.collect()
    gc.disable()
    try:
        t0 = time.process_time()
        run(*args)
        return time.process_time() - t0
    finally:
        gc.enable()


def _none(traj: Trajectory) -> None:
    simulate(traj, NoCompaction("5m"), window=200_000, pricer=Pricer(), refs=ReferenceIndex(traj))


@pytest.mark.slow
def test_none_time_grows_linearly_with_the_session():
    """2N requests against N in the same test: CPU time of this process (other work on the machine
    does not count), the best of three runs each, interleaved. The old walk hashed, copied and
    scanned the whole context at every request: quadratic."""
    n = 2_000
    small, big = chatty(n), chatty(2 * n)
    _none(chatty(50))                                     # imports, price data
    a, b = [], []
    for _ in range(3):
        a.append(_seconds(_none, small))
        b.append(_seconds(_none, big))
    ratio = min(b) / min(a)
    assert ratio <= 2.6, f"{2 * n} requests took {ratio:.2f}x the time of {n} ({min(b):.2f}s vs {min(a):.2f}s)"


def _replay(log: Path) -> None:
    run_replay(make_options([str(log)]))


@pytest.mark.slow
def test_the_whole_replay_of_a_log_grows_linearly(tmp_path):
    """Every policy, the validation and the report on generated Claude Code logs of N and 2N
    requests (about 25 and 50 MB), read from the file: the time of 2N at most 3x that of N (a
    quadratic replay would take 4x). Not 2x: at these sizes the policies' summaries are still
    growing towards their cap (92 KB on average at N, 115 KB at 2N), so 2N holds 2.3x the summary
    text to search, and CI measured 2.71x at load."""
    n = 1_500
    small, big = tmp_path / "small.jsonl", tmp_path / "big.jsonl"
    write_claude_code_log(small, requests=n)
    write_claude_code_log(big, requests=2 * n)
    runs = [(_seconds(_replay, small), _seconds(_replay, big)) for _ in range(2)]   # interleaved, the best of two
    a, b = min(x for x, _ in runs), min(y for _, y in runs)
    assert b / a <= 3.0, f"{2 * n} requests took {b / a:.2f}x the time of {n} ({b:.2f}s vs {a:.2f}s)"


CHILD = textwrap.dedent("""
    import json, resource, subprocess, sys, time
    t0 = time.monotonic()
    with open(sys.argv[2], "w") as out:
        code = subprocess.call([sys.executable, "-m", "app.cli.main", "replay", sys.argv[1], "--json"], stdout=out)
    wall = time.monotonic() - t0
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(json.dumps({"code": code, "wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "rss_mb": ru.ru_maxrss / 1024}))
""")


def replay_in_child(log: Path, out: Path) -> dict:
    """`ctxtui replay LOG --json` in a fresh process whose only child is the replay, so the peak
    RSS (`RUSAGE_CHILDREN.ru_maxrss`) is the replay's alone."""
    import json
    res = subprocess.run([sys.executable, "-c", CHILD, str(log), str(out)], cwd=ROOT, capture_output=True,
                         text=True, timeout=900)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_a_250_mb_log_replays_within_two_minutes_and_500_mb(tmp_path):
    """The issue's case: a 247 MB generated log had not finished after 11.5 minutes (787 MB RSS).
    The limit is on the replay's CPU time (user + system): on a machine shared with other work,
    wall time also measures the others (it is printed)."""
    log = tmp_path / "big.jsonl"
    stats = write_claude_code_log(log, megabytes=250)
    got = replay_in_child(log, tmp_path / "out.json")
    print(f"\n{stats.bytes / 1e6:.0f} MB, {stats.requests:,} requests: wall {got['wall']:.1f}s, "
          f"CPU {got['cpu']:.1f}s, peak RSS {got['rss_mb']:.0f} MB")
    assert got["code"] == 0
    assert got["cpu"] < 120, got
    assert got["rss_mb"] < 500, got
    import json
    report = json.loads((tmp_path / "out.json").read_text())
    assert report["sessions"][0]["requests"] == stats.requests
