"""`ctxtui statusline` on hand-made Claude Code transcripts; every figure is computed here by hand
from Anthropic's list prices for Sonnet 4.5 ($3 / $15 / $3.75 / $6 / $0.30 per million tokens for
input / output / 5-minute write / 1-hour write / cache read)."""
from __future__ import annotations

import io
import json
import os
import stat
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from app.cli.statusline import compute, main
from agent_core.statusline.state import MARK_BYTES, StatusState
from tests.log_helpers import MODEL, assistant, usage, user, write_log

NOW = datetime(2025, 6, 14, 12, 30, tzinfo=timezone.utc).timestamp()


@pytest.fixture(autouse=True)
def utc(monkeypatch):
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def ts(hh_mm: str) -> str:
    return f"2025-06-14T{hh_mm}:00Z"


def make_projects(tmp_path: Path) -> Path:
    projects = tmp_path / "claude" / "projects"
    log = write_log(projects / "-home-me-proj" / "sess-1.jsonl", [
        user("fix the bug", ts=ts("11:00")),
        assistant("m1", "r1", u=usage(inp=1000, out=500, write=2000, read=10_000), ts=ts("11:00")),
        assistant("m2", "r2", u=usage(inp=5, out=10, write=1000, read=40_000), ts=ts("12:00"), block="thinking"),
        assistant("m2", "r2", u=usage(inp=5, out=441, write=1000, read=40_000), ts=ts("12:00"), block="tool_use"),
    ])
    write_log(log.with_suffix("") / "subagents" / "agent-a1.jsonl", [
        assistant("m3", "r3", u=usage(inp=100, out=100), ts=ts("11:05"), sidechain=True)])
    write_log(projects / "-home-me-other" / "sess-2.jsonl", [
        assistant("m4", "r4", u=usage(inp=1000, out=0), ts=ts("12:10"), session="sess-2")])
    old = write_log(projects / "-home-me-old" / "sess-0.jsonl", [
        assistant("m5", "r5", u=usage(inp=10**6, out=0), ts=ts("12:15"), session="sess-0")])
    os.utime(old, (NOW - 3 * 86400, NOW - 3 * 86400))
    return log


def stdin_json(log: Path, **extra) -> dict:
    return {"session_id": "sess-1", "transcript_path": str(log), "cwd": "/home/me/proj",
            "model": {"id": MODEL, "display_name": "Sonnet 4.5"},
            "workspace": {"current_dir": "/home/me/proj", "project_dir": "/home/me/proj"},
            "cost": {"total_cost_usd": 9.99}, **extra}


def env_for(tmp_path: Path) -> dict:
    return {"CTXTUI_HOME": str(tmp_path / "home")}


def state_file(tmp_path: Path) -> Path:
    [found] = (tmp_path / "home" / "statusline").glob("*.json")
    return found


def test_the_figures_of_a_transcript(tmp_path):
    log = make_projects(tmp_path)
    f = compute(stdin_json(log), env_for(tmp_path), NOW)
    assert f.model == "Sonnet 4.5"
    # The last main-chain request: input 5 + cache read 40,000 + cache write 1,000; output not counted.
    assert f.context == 41_005
    assert (f.window, f.threshold) == (200_000, 167_000)    # 200,000 - min(64,000, 20,000) - 13,000
    # m1: 1000*3 + 500*15 + 2000*3.75 + 10000*0.3 = 21,000 µ$; m2 (its last copy, 441 out):
    # 5*3 + 441*15 + 1000*3.75 + 40000*0.3 = 22,380 µ$; the sub-agent's m3: 100*3 + 100*15 = 1,800 µ$.
    assert f.session_usd == pytest.approx(0.045180)
    # Today adds the other project's log written today (1000*3 µ$), not the one last written 3 days ago.
    assert f.today_usd == pytest.approx(0.048180)
    # Activity from 11:00 UTC: the block runs 11:00-16:00, so 3 h 30 min are left at 12:30.
    assert f.block_left_s == pytest.approx(3.5 * 3600)
    # The block's dollars are every log's inside 11:00-16:00 (today's here), burnt over the 1.5 h
    # since its first activity; the cache (5-minute writes, last request 12:00) went cold at 12:05.
    assert f.block_usd == pytest.approx(0.048180) and f.block_usd_per_h == pytest.approx(0.048180 / 1.5)
    assert f.cache_left_s == 0


def test_the_printed_line(tmp_path):
    log = make_projects(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    rc = main([], stdin=io.StringIO(json.dumps(stdin_json(log))), stdout=out, stderr=err,
              env=env_for(tmp_path), now=NOW)
    assert rc == 0 and err.getvalue() == ""
    assert out.getvalue() == ("Sonnet 4.5 · ctx 41k/200k (75% left to auto-compact) · session $0.05 · "
                              "today $0.05 · block 3h30m left $0.05 ($0.03/h) · cache cold\n")


@pytest.mark.parametrize(("write", "at", "shown"), [
    ({"write": 1000}, "2025-06-14T12:27:00Z", "cache warm 2m left"),    # 5-minute writes, 3 minutes ago
    ({"w1h": 1000}, "2025-06-14T12:00:00Z", "cache warm 30m left"),     # 1-hour writes, 30 minutes ago
    ({"w1h": 1000}, "2025-06-14T11:20:00Z", "cache cold"),              # 1-hour writes, 70 minutes ago
    ({}, "2025-06-14T12:25:30Z", "cache warm <1m left"),                # reads only: the 5-minute default
])
def test_the_cache_state_follows_the_last_request_and_its_write_ttl(tmp_path, write, at, shown):
    log = write_log(tmp_path / "claude" / "projects" / "-home-me-proj" / "sess-1.jsonl", [
        assistant("m1", "r1", u=usage(inp=10, out=1, read=5000, **write), ts=at)])
    out = io.StringIO()
    assert main([], stdin=io.StringIO(json.dumps(stdin_json(log))), stdout=out, env=env_for(tmp_path), now=NOW) == 0
    assert out.getvalue().rstrip("\n").endswith(shown), out.getvalue()


def test_a_block_in_its_first_minute_burns_over_a_whole_minute(tmp_path):
    log = write_log(tmp_path / "claude" / "projects" / "-home-me-proj" / "sess-1.jsonl", [
        assistant("m1", "r1", u=usage(inp=1000, out=0), ts="2025-06-14T12:29:50Z")])
    f = compute(stdin_json(log), env_for(tmp_path), NOW)
    assert f.block_usd == pytest.approx(0.003) and f.block_usd_per_h == pytest.approx(0.003 * 60)   # not per 10 s


def test_an_older_state_file_is_read_again_for_the_block_dollars(tmp_path):
    """A state file of the previous format has no dollars per minute: it is not trusted, the logs
    are read again, and the block's dollars are whole."""
    log = make_projects(tmp_path)
    env = env_for(tmp_path)
    compute(stdin_json(log), env, NOW)
    path = state_file(tmp_path)
    raw = json.loads(path.read_text())
    raw["version"] = 4
    for v in raw["logs"].values():
        v.pop("minute_usd", None)
    path.write_text(json.dumps(raw))
    f = compute(stdin_json(log), env, NOW)
    assert f.block_usd == pytest.approx(0.048180) and f.session_usd == pytest.approx(0.045180)


def test_a_second_call_reads_only_the_appended_bytes(tmp_path):
    log = make_projects(tmp_path)
    env = env_for(tmp_path)
    compute(stdin_json(log), env, NOW)
    first = StatusState.load(state_file(tmp_path))
    assert first.logs[str(log)].offset == log.stat().st_size
    # Nothing appended: nothing read.
    compute(stdin_json(log), env, NOW)
    assert StatusState.load(state_file(tmp_path)).logs[str(log)].offset == log.stat().st_size
    # A later copy of m2 with its final output count, and a new response: only those bytes are read,
    # m2 is replaced (not added again) and the context is the new request's.
    size = log.stat().st_size
    extra = [assistant("m2", "r2", u=usage(inp=5, out=641, write=1000, read=40_000), ts=ts("12:00"), block="text"),
             assistant("m6", "r6", u=usage(inp=7, out=3, write=0, read=42_000), ts=ts("12:20"))]
    with log.open("a") as fh:
        for rec in extra:
            fh.write(json.dumps(rec) + "\n")
    f = compute(stdin_json(log), env, NOW)
    st = StatusState.load(state_file(tmp_path))
    assert st.logs[str(log)].offset == log.stat().st_size
    assert log.stat().st_size - size > 0
    # (641 - 441) * 15 µ$ more for m2; m6: 7*3 + 3*15 + 42000*0.3 = 12,666 µ$.
    assert f.session_usd == pytest.approx(0.045180 + 0.003000 + 0.012666)
    assert f.context == 42_007


def test_the_state_file_is_private(tmp_path):
    log = make_projects(tmp_path)
    compute(stdin_json(log), env_for(tmp_path), NOW)
    p = state_file(tmp_path)
    assert stat.S_IMODE(p.stat().st_mode) == 0o600
    assert stat.S_IMODE(p.parent.stat().st_mode) == 0o700


def test_a_rewritten_log_is_counted_again_from_its_start(tmp_path):
    log = make_projects(tmp_path)
    env = env_for(tmp_path)
    compute(stdin_json(log), env, NOW)
    write_log(log, [assistant("m9", "r9", u=usage(inp=2000, out=1000), ts=ts("12:25"))])
    f = compute(stdin_json(log), env, NOW)
    # Only m9 (2000*3 + 1000*15 µ$) and the sub-agent's m3 remain in the session.
    assert f.session_usd == pytest.approx(0.021000 + 0.001800)
    assert f.context == 2000


def test_a_log_rewritten_in_place_to_the_same_size_is_counted_again(tmp_path):
    """A response's output count changed in place with as many digits (441 -> 941), far before the
    saved mark: same inode, same size, only a later modification time. Counted again from the start."""
    log = make_projects(tmp_path)
    env = env_for(tmp_path)
    before_usd = compute(stdin_json(log), env, NOW).session_usd
    st = log.stat()
    text = log.read_text()
    key = '"output_tokens": 441' if '"output_tokens": 441' in text else '"output_tokens":441'
    assert text.count(key) == 1 and text.index(key) + len(key) < len(text) - MARK_BYTES   # before the mark
    with open(log, "r+") as fh:
        fh.write(text.replace(key, key.replace("441", "941")))
    os.utime(log, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert log.stat().st_size == st.st_size and log.stat().st_ino == st.st_ino
    after = compute(stdin_json(log), env, NOW)
    assert after.session_usd == pytest.approx(before_usd + 500 * 15e-6)    # 500 more output tokens at $15/M
    assert StatusState.load(state_file(tmp_path)).logs[str(log)].offset == log.stat().st_size
    # counted once: the next call finds nothing new, and a touch alone re-reads to the same figures
    assert compute(stdin_json(log), env, NOW).session_usd == pytest.approx(after.session_usd)
    os.utime(log, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000))
    assert compute(stdin_json(log), env, NOW).session_usd == pytest.approx(after.session_usd)


@pytest.mark.parametrize("text", ["", "not json", "[1, 2]", '{"transcript_path": 7}', "{" * 100_000,
                                  '{"transcript_path": "relative/x.jsonl"}'])
def test_bad_stdin_still_prints_a_line_and_exits_0(tmp_path, text):
    out, err = io.StringIO(), io.StringIO()
    rc = main([], stdin=io.StringIO(text), stdout=out, stderr=err, env=env_for(tmp_path), now=NOW)
    assert rc == 0
    assert out.getvalue().count("\n") == 1 and out.getvalue().strip()
    assert "Traceback" not in err.getvalue() and err.getvalue().startswith("ctxtui statusline: ")


def test_a_missing_transcript_shows_what_stdin_says(tmp_path):
    data = stdin_json(tmp_path / "claude" / "projects" / "p" / "gone.jsonl")
    out, err = io.StringIO(), io.StringIO()
    assert main([], stdin=io.StringIO(json.dumps(data)), stdout=out, stderr=err, env=env_for(tmp_path), now=NOW) == 0
    assert out.getvalue() == "Sonnet 4.5 · session $9.99 · no transcript yet\n"   # not "today $0.00"


def test_the_command_loads_no_textual_and_prints_one_line(tmp_path):
    log = make_projects(tmp_path)
    code = ("import sys; from app.cli.main import main; rc = main(['statusline']); "
            "bad = [m for m in ('textual', 'rich', 'anthropic', 'genai_prices') if m in sys.modules]; "
            "print(bad, file=sys.stderr); sys.exit(rc or (3 if bad else 0))")
    env = {**os.environ, **env_for(tmp_path)}
    # First call: learns the model's rates (genai-prices) and keeps them; the second loads none of it.
    for _ in range(2):
        r = subprocess.run([sys.executable, "-c", code], input=json.dumps(stdin_json(log)), capture_output=True,
                           text=True, timeout=60, env=env, cwd=Path(__file__).resolve().parents[3])
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("Sonnet 4.5 · ctx 41k/200k")


def test_a_first_call_removes_this_folders_state_of_an_earlier_version_only(tmp_path):
    """The state file was named by sha256 before (agent_core/statusline/state.py): a first call
    deletes that folder's old file, and leaves another folder's alone."""
    import hashlib  # noqa: PLC0415
    log = make_projects(tmp_path)
    folder = tmp_path / "home" / "statusline"
    folder.mkdir(parents=True, mode=0o700)
    mine = folder / f"{hashlib.sha256(str(log.parent.parent).encode()).hexdigest()[:16]}.json"
    other = folder / f"{hashlib.sha256(b'/elsewhere/projects').hexdigest()[:16]}.json"
    for f in (mine, other):
        f.write_text('{"version": 4}')
    out = io.StringIO()
    main([], stdin=io.StringIO(json.dumps(stdin_json(log))), stdout=out, stderr=io.StringIO(),
         env=env_for(tmp_path), now=NOW)
    assert out.getvalue().startswith("Sonnet 4.5 · ctx 41k/200k")
    assert not mine.exists() and other.exists()
    assert sorted(p.name for p in folder.iterdir()) == sorted([other.name, state_file_name(tmp_path, log)])


def state_file_name(tmp_path: Path, log: Path) -> str:
    from agent_core.statusline.state import state_path  # noqa: PLC0415
    return state_path(tmp_path / "home" / "statusline", log.parent.parent).name


# What the warm path must not load (each was milliseconds of every refresh: app/cli/launcher.py,
# agent_core/logs/records.py): the dispatcher's parser, dataclasses (inspect, ast), typing,
# OpenSSL's hashlib, tempfile, and the screen, SDK and price data.
NOT_ON_THE_WARM_PATH = ("argparse", "dataclasses", "inspect", "typing", "hashlib", "tempfile", "importlib.abc",
                        "textual", "rich", "anthropic", "genai_prices", "compaction.transcript", "app.cli.main")


def test_the_console_script_warm_path_after_an_append_loads_none_of_the_heavy_modules(tmp_path):
    """Through the console script's own module (ctxtui_launcher), as Claude Code runs it: the first
    call learns rates and thresholds; after a response is appended, the next call reads it (its
    dollars count) and loads none of NOT_ON_THE_WARM_PATH."""
    log = make_projects(tmp_path)
    code = ("import sys; sys.argv = ['ctxtui', 'statusline']; from app.cli import launcher; rc = launcher.main(); "
            f"bad = [m for m in {NOT_ON_THE_WARM_PATH!r} if m in sys.modules]; "
            "print(bad, file=sys.stderr); sys.exit(rc or (3 if bad else 0))")
    env = {**os.environ, **env_for(tmp_path)}
    run = lambda: subprocess.run([sys.executable, "-c", code], input=json.dumps(stdin_json(log)),  # noqa: E731
                                 capture_output=True, text=True, timeout=60, env=env,
                                 cwd=Path(__file__).resolve().parents[3])
    first = run()
    assert first.stdout.startswith("Sonnet 4.5 · ctx 41k/200k"), first.stderr
    with open(log, "a", encoding="utf-8") as f:
        f.write(json.dumps(assistant("m9", "r9", u=usage(inp=7, out=1000, write=0, read=50_000), ts=ts("12:20")))
                + "\n")
    warm = run()
    assert warm.returncode == 0, warm.stderr
    assert warm.stdout.startswith("Sonnet 4.5 · ctx 50k/200k")      # the appended response was read
    assert warm.stdout != first.stdout


@pytest.mark.parametrize("every_h", [None, 2.5])
def test_the_block_keeps_its_start_after_a_day_of_activity(tmp_path, every_h):
    """A response every 30 minutes for 30 hours from 00:07: blocks 00:00, 05:00, 10:00, 15:00, 20:00,
    01:00 and 06:00 the next day, so at 06:07 the block has 4h53m left (as `usage blocks` and ccusage
    say). The status line keeps one day of minutes; the block chain before it is kept too.
    `every_h`: the status line also ran every so many hours while the log grew (None: only at the end)."""
    start = datetime(2025, 6, 13, 0, 7, tzinfo=timezone.utc).timestamp()
    stamps = [start + i * 1800 for i in range(61)]
    log = tmp_path / "claude" / "projects" / "-p" / "sess-1.jsonl"

    def write_until(t: float) -> None:
        write_log(log, [assistant(f"m{i}", f"r{i}", u=usage(inp=10, out=1),
                                  ts=datetime.fromtimestamp(s, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
                        for i, s in enumerate(stamps) if s <= t])

    if every_h:
        t = start
        while t < stamps[-1]:
            write_until(t)
            compute(stdin_json(log), env_for(tmp_path), t)
            t += every_h * 3600
    write_until(stamps[-1])
    f = compute(stdin_json(log), env_for(tmp_path), stamps[-1])
    assert f.block_left_s == pytest.approx(4 * 3600 + 53 * 60)


def test_a_big_first_read_through_the_scan_says_what_the_reader_says(tmp_path, monkeypatch):
    """A log read from its start past fast_decode.MIN_BYTES goes through fact_scan (past
    prefetch.SPLIT_BYTES, in two halves at once): the same figures and the same saved offset as the
    line-by-line reader, a half-written last line left for later."""
    from agent_core.logs import fast_decode, prefetch
    from agent_core.statusline import read

    def figures(min_bytes, home, split=1 << 60):
        scans = []
        real, real_split = read._scan, prefetch.split_scan
        with monkeypatch.context() as m:
            m.setattr(fast_decode, "MIN_BYTES", min_bytes)
            m.setattr(prefetch, "SPLIT_BYTES", split)
            m.setattr(read, "_scan", lambda *a: scans.append(1) or real(*a))
            m.setattr(prefetch, "split_scan", lambda *a, **k: (r := real_split(*a, **k)) and scans.append("split") or r)
            env = {**env_for(tmp_path), "CTXTUI_HOME": str(tmp_path / home)}
            first = compute(stdin_json(log), env, NOW)
            with open(log, "a") as f:
                f.write(rest + "\n" + json.dumps(assistant("m9", "r9", u=usage(inp=7, out=70), ts=ts("12:20"))) + "\n")
            second = compute(stdin_json(log), env, NOW)
            with open(log, "rb+") as f:         # back as it was for the other run
                f.truncate(size)
        return first, second, scans

    log = make_projects(tmp_path)
    late = json.dumps(assistant("m8b", "r8b", u=usage(inp=11, out=900), ts=ts("12:06")))
    half, rest = late[:40], late[40:]
    with open(log, "a") as f:
        f.write(json.dumps(assistant("m8", "r8", u=usage(inp=3, out=30), ts=ts("12:05"))) + "\n")
        f.write(half)                             # being written: finished by the next append
    size = log.stat().st_size
    plain = figures(1 << 60, "plain")
    scanned = figures(0, "scanned")
    halves = figures(0, "halves", split=1)
    assert plain[2] == [] and 1 in scanned[2] and "split" not in scanned[2]
    assert "split" in halves[2] or (os.cpu_count() or 1) < 2
    assert scanned[:2] == plain[:2] == halves[:2]
    assert plain[0].session_usd != plain[1].session_usd


def test_a_response_just_before_midnight_local_time_counts_for_that_day(tmp_path, monkeypatch):
    """Days are worked out once per minute and per time zone: the minute before local midnight and
    the one after fall on two days, and a change of TZ in the same process is seen."""
    from agent_core.statusline.read import _day_and_minute

    monkeypatch.setenv("TZ", "Asia/Kolkata")       # +05:30: local midnight is at 18:30 UTC
    time.tzset()
    before = datetime(2025, 6, 14, 18, 29, 30, tzinfo=timezone.utc).timestamp()
    assert _day_and_minute(before)[0] == "2025-06-14"
    assert _day_and_minute(before + 40)[0] == "2025-06-15"
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    assert _day_and_minute(before + 40)[0] == "2025-06-14"
