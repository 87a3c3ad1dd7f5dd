"""Hostile session logs (issue 10, cases 10 and 11): the readers of `usage`, `watch` and the
transcript browser open only regular files, bound every line, skip what they cannot read with a
word, and re-read a log that was replaced or rewritten. Every log is written here.

A reader that blocks on a FIFO or eats /dev/zero is run in a child process with a memory limit
and a timeout, so a regression fails the test instead of hanging or exhausting the machine."""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from agent_core.logs import LogFollower, LogReader, UsageRecord, discover
from agent_core.logs.discover import list_logs
from app.cli.usage import main as usage_main
from agent_core.watch.state import WatchState
from agent_core.watch.target import resolve_target
from agent_core.logs import transcript_files as logfiles
from app.cli.watch import main as watch_main
from tests.log_helpers import MODEL, assistant, boundary, usage, user, write_log

ROOT = Path(__file__).resolve().parents[3]
CHILD_MEMORY = 2 << 30            # the old readers took 4.8 GB in 8 s from /dev/zero
HANG_GUARD_S = 60
DEEP = 100_000

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
needs_dev_zero = pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")


def run_child(code: str, *args: str) -> subprocess.CompletedProcess:
    """`python -c code args` with a capped address space and a hang guard."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY, CHILD_MEMORY))
    return subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=HANG_GUARD_S, preexec_fn=limit)


def hostile_folder(tmp_path: Path) -> Path:
    """One good log, then a FIFO, a symlink to /dev/zero and a symlink loop, all named *.jsonl."""
    folder = tmp_path / "projects" / "-home-me-proj"
    write_log(folder / "good.jsonl", [user(), assistant("m1", "r1", u=usage(inp=100, out=10))])
    os.mkfifo(folder / "fifo.jsonl")
    os.symlink("/dev/zero", folder / "zero.jsonl")
    os.symlink("loop.jsonl", folder / "loop.jsonl")
    return folder


def deep_line(prefix: str = '{"type":"assistant","message":{"usage":{"input_tokens":1},"content":') -> str:
    return prefix + "[" * DEEP + "]" * DEEP + "}}"


def strict_json(text: str):
    """json.loads that refuses NaN and Infinity, as every other JSON parser does."""
    def bad(name: str):
        raise ValueError(f"not JSON: {name}")
    return json.loads(text, parse_constant=bad)


# ================================================================== only regular files

@needs_fifo
@needs_dev_zero
def test_usage_skips_a_fifo_a_device_symlink_and_a_symlink_loop_with_a_warning(tmp_path):
    folder = hostile_folder(tmp_path)
    done = run_child("import sys; from app.cli.main import main; sys.exit(main(sys.argv[1:]))",
                     "usage", str(folder), "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    data = strict_json(done.stdout)
    assert data["totals"]["requests"] == 1 and data["totals"]["input_tokens"] == 100
    assert data["files"] == 1
    err = done.stderr
    assert "Traceback" not in err
    for name in ("fifo.jsonl", "zero.jsonl"):
        line = next(x for x in err.splitlines() if name in x)
        assert "not a regular file" in line and "skipped" in line
    assert any("loop.jsonl" in x for x in err.splitlines())


@needs_fifo
@needs_dev_zero
def test_watch_refuses_a_fifo_or_device_and_folder_mode_never_picks_one(tmp_path, capsys):
    folder = hostile_folder(tmp_path)
    old = 1_600_000_000
    os.utime(folder / "good.jsonl", (old, old))   # the FIFO and /dev/zero are newer
    assert resolve_target(folder).log == (folder / "good.jsonl").resolve()
    for name in ("fifo.jsonl", "zero.jsonl"):
        assert watch_main([str(folder / name)]) == 2
        err = capsys.readouterr().err
        assert "not a regular file" in err and name in err


@needs_fifo
@needs_dev_zero
def test_watch_state_and_the_transcript_browser_refuse_a_fifo_or_device_promptly(tmp_path):
    folder = hostile_folder(tmp_path)
    code = """if True:
        import sys
        from pathlib import Path
        from agent_core.watch.state import WatchState
        from agent_core.logs import transcript_files as logfiles
        for name in sys.argv[1:]:
            p = Path(name)
            for what, read in (("watch", lambda: WatchState(p).poll()),
                               ("browser", lambda: list(logfiles.iter_records(p)))):
                try:
                    read()
                    print(what, p.name, "read")
                except OSError as e:
                    print(what, p.name, "refused:", e.strerror)
    """
    done = run_child(code, str(folder / "fifo.jsonl"), str(folder / "zero.jsonl"))
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert len(lines) == 4
    assert all("refused: not a regular file" in x for x in lines), lines
    # The browser's file list shows only the regular log.
    listed = list_logs(None, folder.parent)
    assert [f.name for f in listed] == ["good.jsonl"]


@needs_fifo
def test_a_fifo_never_blocks_the_follower(tmp_path):
    fifo = tmp_path / "s.jsonl"
    os.mkfifo(fifo)
    outcome: list[object] = []

    def read() -> None:
        try:
            outcome.append(LogReader(fifo).read())
        except OSError as e:
            outcome.append(e)

    t = threading.Thread(target=read, daemon=True)
    t.start()
    t.join(HANG_GUARD_S / 4)
    blocked = t.is_alive()
    if blocked:   # the old reader waits in open() for a writer: give it one so the thread ends
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        t.join(5)
    assert not blocked, "opening a FIFO blocked the reader"
    (err,) = outcome
    assert isinstance(err, OSError) and "not a regular file" in str(err)


def test_discover_survives_a_symlink_loop(tmp_path):
    write_log(tmp_path / "a.jsonl", [assistant("m1")])
    os.symlink("loop.jsonl", tmp_path / "loop.jsonl")
    assert {p.name for p in discover([tmp_path])} == {"a.jsonl", "loop.jsonl"}


# ================================================================== bounded lines

def test_a_line_over_the_cap_is_skipped_as_corrupt_without_being_held_whole(tmp_path):
    big = assistant("m-big", "r-big", u=usage(inp=999))
    big["message"]["content"] = [{"type": "text", "text": "x" * 20_000}]
    log = write_log(tmp_path / "s.jsonl", [assistant("m1", "r1", u=usage(inp=1)), big,
                                            assistant("m2", "r2", u=usage(inp=2))])
    reader = LogReader(log)
    reader.follower.max_line = 4096
    reader.follower.chunk_size = 512
    got = [r.buckets["input"] for r in reader.read() if isinstance(r, UsageRecord)]
    assert got == [1, 2]
    assert reader.skipped == 1 and reader.stats.first_corrupt_line == 2


def test_a_half_written_oversized_line_is_not_accumulated(tmp_path):
    log = write_log(tmp_path / "s.jsonl", [assistant("m1", "r1", u=usage(inp=1))], tail="{" + "x" * 50_000)
    f = LogFollower(log, max_line=4096, chunk_size=512)
    assert [n for n, _ in f.lines()] == [1]
    assert len(f.pending) <= 4096
    with open(log, "a") as out:
        out.write("y" * 50_000 + "}\n" + json.dumps(assistant("m2", "r2")) + "\n")
    assert [n for n, _ in f.lines()] == [3]
    assert f.stats.corrupt == 1 and f.stats.first_corrupt_line == 2 and f.pending == b""


def test_the_transcript_browser_shows_an_oversized_line_as_skipped(tmp_path):
    log = write_log(tmp_path / "s.jsonl", [user("first"), user("y" * 20_000), user("third")])
    recs = [r for r, _ in logfiles.iter_records(log, max_line=4096)]
    assert [r.line for r in recs] == [1, 2, 3]
    assert recs[1].kind == "other" and "longer than" in recs[1].summary and "skipped" in recs[1].summary
    assert "third" in recs[2].text


# ================================================================== odd records

def test_a_line_nested_100000_deep_is_skipped_by_usage_watch_and_the_browser(tmp_path):
    cc = write_log(tmp_path / "cc" / "s.jsonl", [deep_line(), assistant("m1", "r1", u=usage(inp=7)), deep_line()])
    out, err = _usage(str(cc.parent), "--json")
    assert strict_json(out)["totals"]["input_tokens"] == 7 and strict_json(out)["skipped_lines"] == 2
    assert "skipped 2 corrupt lines" in err
    # ctxtui's log: the meta line itself is absurdly deep.
    ours = tmp_path / "ours.jsonl"
    entry = {"t": "entry", "entry": {"usage": usage(inp=5), "response_id": "r1", "meta": {"model": MODEL}}}
    ours.write_text(deep_line('{"t":"meta","x":{"y":') + "\n" + json.dumps(entry) + "\n")
    s = WatchState(ours)
    s.poll()
    assert s.responses == 1 and s.skipped == 1
    rec = logfiles.parse_line(1, deep_line())
    assert rec is not None and rec.kind == "other"


@pytest.mark.parametrize("model", [{"name": "x"}, ["x"], 5, None, True])
def test_a_model_that_is_not_a_string_is_an_unknown_model(tmp_path, model):
    log = write_log(tmp_path / "s.jsonl", [assistant("m1", "r1", u=usage(inp=3), model=model),
                                            assistant("m2", "r2", u=usage(inp=4))])
    out, err = _usage(str(log), "--json")
    data = strict_json(out)
    assert data["by_model"]["unknown"]["input_tokens"] == 3 and data["by_model"][MODEL]["input_tokens"] == 4
    s = WatchState(log)
    up = s.poll()
    assert s.responses == 2 and set(up.cost.by_model) == {"unknown", MODEL}


def test_a_ctxtui_log_with_odd_meta_types_is_watched(tmp_path):
    path = tmp_path / "s.jsonl"
    meta = {"t": "meta", "model": {"x": 1}, "session_id": ["x"], "config": ["not", "a", "table"]}
    entry = {"t": "entry", "entry": {"usage": usage(inp=5), "response_id": "r1", "meta": {"model": [MODEL]}}}
    path.write_text(json.dumps(meta) + "\n" + json.dumps(entry) + "\n")
    s = WatchState(path)
    up = s.poll()
    assert s.responses == 1 and up.context.tokens == 25 and s.model == "unknown"


@pytest.mark.parametrize("ts", [1e300, -1.0, "0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-12:00"])
def test_a_timestamp_out_of_any_calendar_is_an_unknown_time(tmp_path, ts):
    log = write_log(tmp_path / "s.jsonl", [assistant("m1", "r1", u=usage(inp=3), ts=ts),
                                            assistant("m2", "r2", u=usage(inp=4))])
    out, _ = _usage(str(log), "--json")
    data = strict_json(out)
    assert data["by_day"]["unknown"]["input_tokens"] == 3 and data["totals"]["input_tokens"] == 7
    _usage(str(log), "--by", "day", "--since", "2025-01-01")
    s = WatchState(log)
    s.poll()
    assert s.responses == 2 and s.cost_extras() is not None


def test_usage_json_is_valid_for_an_absurd_count(tmp_path):
    log = write_log(tmp_path / "s.jsonl", [assistant("m1", "r1", u=usage(inp=10 ** 400)),
                                            assistant("m2", "r2", u=usage(inp=100, out=10))])
    out, err = _usage(str(log), "--json")
    data = strict_json(out)           # no Infinity, no NaN
    assert data["totals"]["input_tokens"] == 100 and data["totals"]["requests"] == 1
    assert data["skipped_lines"] == 1 and "skipped 1 corrupt line" in err
    assert isinstance(data["totals"]["cost_usd"], float)
    text, _ = _usage(str(log))
    assert "inf" not in text.lower()
    s = WatchState(log)
    up = s.poll()
    assert s.responses == 1 and up.cost.total_usd is not None and up.cost.total_usd < 1


def _usage(*argv: str) -> tuple[str, str]:
    import io

    out, err = io.StringIO(), io.StringIO()
    assert usage_main(list(argv), stdout=out, stderr=err) == 0, err.getvalue()
    return out.getvalue(), err.getvalue()


# ================================================================== watch: replaced or rewritten logs

SESSION = "5f1e2d3c-0000-4000-8000-00000000aaaa"


def _first(n: int, *, inp: int) -> list[dict]:
    return [user("go", session=SESSION, uuid="u0")] + [
        assistant(f"old{i}", f"r-old{i}", session=SESSION, u=usage(inp=inp, out=1, read=50_000)) for i in range(n)]


def _second() -> list[dict]:
    """Another history: longer than the first, so a follower that kept its offset reads on."""
    return [user("go", session=SESSION, uuid="u0"),
            boundary(90_000, session=SESSION, uuid="b-new"),
            *[assistant(f"new{i}", f"r-new{i}", session=SESSION, u=usage(inp=7, out=3, read=1_000), block="tool_use")
              for i in range(6)]]


def _assert_second(s: WatchState) -> None:
    assert s.responses == 6 and s.turns == 6
    row = s.cost.event().by_model[MODEL]
    assert row["requests"] == 6 and row["input"] == 42 and row["cache_read"] == 6_000
    assert s.tokens == 1_007        # input + cache read, as Claude Code shows it: output apart
    assert list(s.compactions) == ["b-new"]


def test_watch_rereads_a_log_replaced_atomically(tmp_path):
    path = write_log(tmp_path / f"{SESSION}.jsonl", _first(2, inp=500))
    s = WatchState(path)
    s.poll()
    assert s.responses == 2
    tmp = write_log(tmp_path / "new.tmp", _second())
    os.replace(tmp, path)
    up = s.poll()
    assert up.reset
    _assert_second(s)
    assert not s.poll().reset


def test_watch_rereads_a_log_truncated_and_rewritten_in_place(tmp_path):
    path = write_log(tmp_path / f"{SESSION}.jsonl", _first(2, inp=500))
    s = WatchState(path)
    s.poll()
    ino = path.stat().st_ino
    write_log(path, _second())                   # same file, same first line, more bytes than before
    assert path.stat().st_ino == ino
    up = s.poll()
    assert up.reset
    _assert_second(s)


def test_watch_rereads_a_log_rewritten_in_place_to_the_same_size(tmp_path):
    """Two responses' input tokens changed in place (500 -> 900: the same number of bytes), far
    before the follower's end mark, and the file kept its size and inode: only its modification
    time says it was written. The figures are counted again from the start."""
    path = write_log(tmp_path / f"{SESSION}.jsonl", _first(6, inp=500))
    s = WatchState(path)
    s.poll()
    assert s.cost.event().by_model[MODEL]["input"] == 3_000
    before = path.stat()
    text = path.read_text()
    key = '"input_tokens": 500' if '"input_tokens": 500' in text else '"input_tokens":500'
    changed = text.replace(key, key.replace("500", "900"), 2)
    assert len(changed) == len(text) and changed.index("900") < len(text) - 200   # before the end mark
    with open(path, "r+") as f:                  # in place: same inode, same size
        f.write(changed)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000))   # a later write, whatever the clock
    assert path.stat().st_ino == before.st_ino and path.stat().st_size == before.st_size
    up = s.poll()
    assert up.reset
    assert s.cost.event().by_model[MODEL]["input"] == 3_800 and s.responses == 6
    assert not s.poll().reset                    # and read once: nothing new, nothing re-read


def test_a_follower_reads_on_after_an_append_that_raced_its_read(tmp_path):
    """Lines appended while a read is under way are read by the next one, without a reset."""
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"a": 1}\n' * 1000)
    follower = LogFollower(path, chunk_size=512)
    lines = follower.lines()
    next(lines)
    with open(path, "ab") as f:
        f.write(b'{"b": 2}\n')
    rest = list(lines)
    got = 1 + len(rest) + len(list(follower.lines()))
    assert got == 1001 and follower.resets == 0


def test_watch_rereads_a_log_truncated_to_less(tmp_path):
    path = write_log(tmp_path / f"{SESSION}.jsonl", _first(12, inp=500))
    s = WatchState(path)
    s.poll()
    write_log(path, _first(1, inp=9))
    up = s.poll()
    assert up.reset and s.responses == 1
    assert s.cost.event().by_model[MODEL]["input"] == 9


def test_appending_never_resets(tmp_path):
    path = write_log(tmp_path / f"{SESSION}.jsonl", _first(2, inp=500))
    s = WatchState(path)
    s.poll()
    with open(path, "a") as f:
        f.write(json.dumps(assistant("more", "r-more", session=SESSION, u=usage(inp=1))) + "\n")
    up = s.poll()
    assert not up.reset and s.responses == 3


async def test_the_watch_screen_starts_over_when_the_log_is_replaced(tmp_path):
    from tests.app.watch_helpers import SIZE, make_app, until
    from agent_core.watch.target import WatchTarget

    path = write_log(tmp_path / f"{SESSION}.jsonl", [*_first(2, inp=500), boundary(80_000, session=SESSION)])
    app = make_app(WatchTarget(path), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        scr = app.watch_screen
        await until(pilot, scr.loaded.is_set, "the loaded log")
        assert scr.cost_pane.cost.by_model[MODEL]["requests"] == 2 and scr.timeline.row_count == 1
        os.replace(write_log(tmp_path / "new.tmp", _second()), path)
        await until(pilot, lambda: scr.cost_pane.cost.by_model[MODEL]["requests"] == 6, "the new log's totals")
        assert scr.timeline.row_count == 1 and scr.context_pane.context.tokens == 1_007
        assert scr.state.responses == 6
