"""`ctxtui usage`'s saved state (agent_core/usage/report_cache.py): a repeated report reads only what
was appended, and always says what a cold run over the same logs says."""
from __future__ import annotations

import json
import os
import stat

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_core.logs import claude_code, fact_scan
from agent_core.usage import report_cache
from tests.app.cli.usage_helpers import run, run_json
from tests.log_helpers import assistant, boundary, usage, user, write_log


def _state_files(home) -> list:
    folder = home / "cache" / report_cache.DIR_NAME
    return sorted(folder.glob("*.state")) if folder.exists() else []


@pytest.fixture
def home(tmp_path, monkeypatch):
    h = tmp_path / "ctxtui-home"
    monkeypatch.setenv("CTXTUI_HOME", str(h))
    return h


def cold(monkeypatch, tmp_path, *argv):
    """The same report with no saved state anywhere (a fresh ctxtui home)."""
    fresh = tmp_path / f"cold-{len(list(tmp_path.glob('cold-*')))}"
    with monkeypatch.context() as m:
        m.setenv("CTXTUI_HOME", str(fresh))
        return run_json(*argv)[0]


def parsed_lines(monkeypatch) -> list:
    """Counts the log lines parsed (JSON decoded and handed to the parser's `extract`, by the line
    reader or by the whole-log scan)."""
    seen: list = []
    real = claude_code.extract

    def counting(obj, fallback):
        seen.append(obj.get("uuid"))
        return real(obj, fallback)

    monkeypatch.setattr(claude_code, "extract", counting)
    monkeypatch.setattr(fact_scan, "extract", counting)
    return seen


def append(path, records, tail: str = "") -> None:
    with open(path, "a", encoding="utf-8") as f:
        for r in records:
            f.write((r if isinstance(r, str) else json.dumps(r)) + "\n")
        f.write(tail)


def test_a_repeated_report_reads_only_the_appended_lines_and_matches_a_cold_run(tmp_path, home, monkeypatch):
    root = tmp_path / "projects"
    log = write_log(root / "-home-me-a" / "s1.jsonl", [
        user(session="s1"),
        assistant("m1", "r1", session="s1", u=usage(inp=100, out=10), block="thinking"),
        assistant("m1", "r1", session="s1", u=usage(inp=100, out=50)),
        boundary(120_000, session="s1", ts="2025-06-14T10:30:00Z"),
    ])
    first, _ = run_json(str(root))
    assert len(_state_files(home)) == 1
    mode = stat.S_IMODE(os.stat(_state_files(home)[0]).st_mode)
    assert mode == 0o600 and stat.S_IMODE(os.stat(_state_files(home)[0].parent).st_mode) == 0o700
    seen = parsed_lines(monkeypatch)
    again, _ = run_json(str(root))
    assert again == first and seen == []          # nothing appended: nothing parsed
    append(log, [assistant("m2", "r2", session="s1", u=usage(inp=300, out=30, read=9000), uuid="new-1",
                           ts="2025-06-14T10:31:00Z")])
    later, _ = run_json(str(root))
    assert seen == ["new-1"]                      # only the appended line
    assert later == cold(monkeypatch, tmp_path, str(root))
    assert later["totals"]["requests"] == 2
    # the compaction waiting in the saved state got its tokens-after from the appended response
    assert later["sessions"][0]["compactions"][0]["tokens_after"] == 9300


@pytest.mark.parametrize("report", ["session", "daily", "blocks"])
def test_a_session_with_a_sub_agent_log_goes_on_from_its_state(tmp_path, home, monkeypatch, report):
    """Claude Code appends to a session's log while its sub-agent logs (read after it) stand: the
    next report still reads only what was appended. A sub-agent's responses, later in time than the
    main log's, change neither the session's last context nor the order of its compactions."""
    root = tmp_path / "projects"
    log = write_log(root / "-home-me-a" / "s1.jsonl", [
        assistant("m1", "r1", session="s1", u=usage(inp=100, out=10), ts="2025-06-14T10:00:00Z"),
        boundary(120_000, session="s1", ts="2025-06-14T10:05:00Z")])
    write_log(root / "-home-me-a" / "s1" / "subagents" / "agent-x.jsonl", [
        assistant("m9", "r9", session="s1", sidechain=True, u=usage(inp=7, out=7, read=50_000),
                  ts="2025-06-14T12:00:00Z"),
        dict(boundary(40_000, session="s1", ts="2025-06-14T11:00:00Z", uuid="b-sub"), isSidechain=True)])
    now = ["--now", "2025-06-14T13:00:00Z"] if report == "blocks" else []
    run_json(report, str(root), *now)
    seen = parsed_lines(monkeypatch)
    append(log, [assistant("m2", "r2", session="s1", u=usage(inp=300, out=30, read=9000), uuid="new-1",
                           ts="2025-06-14T10:31:00Z"),
                 dict(boundary(200_000, session="s1", ts="2025-06-14T10:40:00Z", uuid="b-late"))])
    later, _ = run_json(report, str(root), *now)
    assert seen == ["new-1", "b-late"]            # only the appended lines: the state was used
    assert later == cold(monkeypatch, tmp_path, report, str(root), *now)
    if report == "session":
        s1 = later["sessions"][0]
        assert s1["last_context_tokens"] == 9300   # the main chain's last request, not the sub-agent's
        assert [c["tokens_before"] for c in s1["compactions"]] == [120_000, 200_000, 40_000]   # in time order


def test_a_repeated_run_decodes_only_the_saved_copies_of_responses_it_meets_again(tmp_path, home, monkeypatch):
    """The saved standing copies are one group per log, decoded only when a new copy of one of its
    responses comes; a group that gave a copy away is saved without it, and the run stays warm."""
    root = tmp_path / "projects"
    a = write_log(root / "p" / "a.jsonl", [assistant("m1", "r1", session="s1", u=usage(inp=100, out=1)),
                                           assistant("m5", "r5", session="s1", u=usage(inp=50, out=5))])
    b = write_log(root / "p" / "b.jsonl", [assistant("m2", "r2", session="s2", u=usage(inp=70, out=7))])
    run_json(str(root))
    opened: list[int] = []
    real = report_cache.TrackedDeduper._group
    monkeypatch.setattr(report_cache.TrackedDeduper, "_group", lambda self, old: opened.append(old) or real(self, old))
    seen = parsed_lines(monkeypatch)
    append(b, [assistant("m3", "r3", session="s2", u=usage(inp=30, out=3), uuid="new-b")])
    data, _ = run_json(str(root))
    assert seen == ["new-b"] and opened == []          # a new response: no saved copy decoded
    assert data == cold(monkeypatch, tmp_path, str(root))
    # later copies of m1, whose standing copy the group of a.jsonl holds (the second time, the group
    # saved again by the first); a copy right after the log's last response would read cold
    for before, out in (([], 9), ([assistant("m6", "r6", session="s1", u=usage(inp=60, out=6), uuid="m6")], 12)):
        append(a, [*before, assistant("m1", "r1", session="s1", u=usage(inp=100, out=out), uuid=f"m1-{out}")])
        seen.clear()
        opened.clear()
        data, _ = run_json(str(root))
        assert seen == [r["uuid"] for r in before] + [f"m1-{out}"] and opened == [0]
        assert data == cold(monkeypatch, tmp_path, str(root))
        assert data["totals"]["output_tokens"] == out + 5 + 7 + 3 + 6 * len(before)


def test_a_session_s_log_in_another_project_that_comes_first_reads_cold(tmp_path, home, monkeypatch):
    """A session's project is its first log's in the run's order (main logs before sub-agent logs):
    a new log of another project, of a session the state holds, changes it (found by the property
    test below)."""
    root = tmp_path / "projects"
    write_log(root / "p" / "a" / "subagents" / "agent-x.jsonl",
              [assistant("m1", "r1", session="s1", sidechain=True, u=usage(inp=100, out=1))])
    run_json("session", str(root))
    write_log(root / "q" / "c.jsonl", [user(session="s1", isCompactSummary=True)])
    got, _ = run_json("session", str(root))
    assert got == cold(monkeypatch, tmp_path, "session", str(root))
    assert got["sessions"][0]["project"] == "q"


def test_a_damaged_group_of_standing_copies_reads_cold(tmp_path, home, monkeypatch):
    root = tmp_path / "projects"
    a = write_log(root / "p" / "a.jsonl", [assistant("m1", "r1", session="s1", u=usage(inp=100, out=1)),
                                           assistant("m5", "r5", session="s1", u=usage(inp=50, out=5))])
    run_json(str(root))
    state = _state_files(home)[0]
    data = report_cache.marshal.loads(state.read_bytes())
    data["dedup"] = [(keys, b"\x00damaged") for keys, _ in data["dedup"]]
    state.write_bytes(report_cache.marshal.dumps(data))
    append(a, [assistant("m1", "r1", session="s1", u=usage(inp=100, out=9), uuid="m1-9")])
    got, _ = run_json(str(root))
    assert got == cold(monkeypatch, tmp_path, str(root)) and got["totals"]["output_tokens"] == 14


def test_a_log_rewritten_in_place_or_shortened_is_read_again_whole(tmp_path, home, monkeypatch):
    root = tmp_path / "projects"
    log = write_log(root / "p" / "s1.jsonl", [assistant("m1", "r1", session="s1", u=usage(inp=100, out=10))])
    run_json(str(root))
    text = log.read_text()
    st0 = os.stat(log)
    log.write_text(text.replace('"input_tokens": 100', '"input_tokens": 900'))     # same size, new figure
    os.utime(log, ns=(st0.st_atime_ns, st0.st_mtime_ns + 1_000_000))
    seen = parsed_lines(monkeypatch)
    data, _ = run_json(str(root))
    assert seen and data["totals"]["input_tokens"] == 900
    log.write_text(text[: len(text) // 2])       # cut short: a corrupt last line, nothing counted
    data, _ = run_json(str(root))
    assert data == cold(monkeypatch, tmp_path, str(root)) and data["totals"]["requests"] == 0


def test_a_log_grown_after_a_rewrite_of_its_start_is_read_again_whole(tmp_path, home, monkeypatch):
    root = tmp_path / "projects"
    log = write_log(root / "p" / "s1.jsonl", [assistant("m1", "r1", session="s1", u=usage(inp=100, out=10)),
                                              assistant("m2", "r2", session="s1", u=usage(inp=100, out=10))])
    run_json(str(root))
    text = log.read_text()
    log.write_text(text.replace('"input_tokens": 100', '"input_tokens": 700', 1)
                   + json.dumps(assistant("m3", "r3", session="s1")) + "\n")
    data, _ = run_json(str(root))
    assert data == cold(monkeypatch, tmp_path, str(root))
    assert data["totals"]["input_tokens"] == 700 + 100 + 100


def test_a_new_copy_of_a_response_a_later_log_holds_makes_the_run_cold(tmp_path, home, monkeypatch):
    """Which copy of a response counts depends on the order of its copies: a copy appended to an
    earlier log, of a response a later log already holds, cannot be added on top."""
    root = tmp_path / "projects"
    a = write_log(root / "p" / "a.jsonl", [assistant("m0", "r0", session="s1")])
    write_log(root / "p" / "b.jsonl", [assistant("m1", "r1", session="s2", sidechain=True, u=usage(inp=5, out=5))])
    run_json(str(root))
    append(a, [assistant("m1", "r1", session="s1", u=usage(inp=5, out=5), uuid="main-copy")])
    seen = parsed_lines(monkeypatch)
    data, _ = run_json(str(root))
    assert len(seen) > 1                           # read again whole
    assert data == cold(monkeypatch, tmp_path, str(root))


def test_a_response_cut_between_two_runs_reads_cold(tmp_path, home, monkeypatch):
    """A run that came while Claude Code was writing a response's content blocks: the next copy of
    that response follows; a cold run merges the two copies."""
    root = tmp_path / "projects"
    log = write_log(root / "p" / "s1.jsonl", [
        assistant("m1", "r1", session="s1", u=usage(inp=100, out=1), block="thinking", ts="2025-06-14T09:00:00Z")])
    run_json(str(root))
    append(log, [assistant("m1", "r1", session="s1", u=usage(inp=100, out=80), ts="2025-06-14T09:00:05Z")])
    data, _ = run_json(str(root))
    assert data == cold(monkeypatch, tmp_path, str(root))
    assert data["sessions"][0]["first_timestamp"] == "2025-06-14T09:00:05Z"


def test_a_damaged_foreign_or_open_state_is_ignored(tmp_path, home, monkeypatch):
    root = tmp_path / "projects"
    write_log(root / "p" / "s1.jsonl", [assistant("m1", "r1", session="s1", u=usage(inp=100, out=10))])
    want, _ = run_json(str(root))
    state = _state_files(home)[0]
    for damage in (b"", b"\x00garbage", state.read_bytes()[:-7]):
        state.write_bytes(damage)
        assert run_json(str(root))[0] == want
    run_json(str(root))                            # a good state again
    os.chmod(state, 0o644)                         # readable by others: not trusted, not read
    seen = parsed_lines(monkeypatch)
    assert run_json(str(root))[0] == want and seen
    real = state.read_bytes()
    state.unlink()
    other = tmp_path / "elsewhere.state"
    other.write_bytes(real)
    os.chmod(other, 0o600)
    state.symlink_to(other)                        # a link planted in its place: not followed
    seen.clear()
    assert run_json(str(root))[0] == want and seen


def test_other_options_keep_their_own_state(tmp_path, home, monkeypatch):
    root = tmp_path / "projects"
    write_log(root / "p" / "s1.jsonl", [
        assistant("m1", "r1", session="s1", u=usage(inp=100, out=10), ts="2025-06-14T23:30:00Z")])
    utc, _ = run_json(str(root), "--utc")
    tokyo, _ = run_json(str(root), "--timezone", "Asia/Tokyo")
    assert list(utc["by_day"]) == ["2025-06-14"] and list(tokyo["by_day"]) == ["2025-06-15"]
    assert len(_state_files(home)) == 2
    assert run_json(str(root), "--utc")[0] == utc


def test_ctxtui_logs_and_unreadable_files_are_never_saved(tmp_path, home, monkeypatch):
    root = tmp_path / "projects"
    write_log(root / "p" / "s1.jsonl", [assistant("m1", "r1", session="s1")])
    fifo = root / "p" / "pipe.jsonl"
    os.mkfifo(fifo)
    code, out, err = run(str(root), "--json")
    assert code == 0 and "could not read" in err
    assert _state_files(home) == []
    code, out, err = run(str(root), "--json")        # warned again: the run was cold again
    assert "could not read" in err


def test_a_full_disk_loses_nothing_but_the_saving(tmp_path, home, monkeypatch):
    root = tmp_path / "projects"
    write_log(root / "p" / "s1.jsonl", [assistant("m1", "r1", session="s1", u=usage(inp=100, out=10))])
    real_open, real_replace = os.open, os.replace

    def no_space(*_a):
        raise OSError(28, "No space left on device")

    def opening(path, flags, *a, **k):
        if report_cache.DIR_NAME in str(path) and flags & os.O_CREAT:
            no_space()
        return real_open(path, flags, *a, **k)

    monkeypatch.setattr(os, "open", opening)           # the state cannot even be created
    assert run_json(str(root))[0]["totals"]["input_tokens"] == 100
    monkeypatch.setattr(os, "open", real_open)
    monkeypatch.setattr(os, "replace", lambda a, b: no_space() if report_cache.DIR_NAME in str(b)
                        else real_replace(a, b))       # written, but not put in place
    assert run_json(str(root))[0]["totals"]["input_tokens"] == 100
    folder = home / "cache" / report_cache.DIR_NAME
    assert _state_files(home) == [] and list(folder.iterdir()) == []     # no half-written file left


# ---- property: any history of appends, new logs and rewrites --------------------------------------------

KEYS = [("m1", "r1"), ("m2", "r2"), ("m3", "r3"), ("m1", "r9")]
TIMES = ["2025-06-14T10:00:00Z", "2025-06-14T10:00:00Z", "2025-06-14T23:59:00Z", "2025-06-15T00:01:00Z", None]

def _response(k, inp, out, side, sess, ts, block, logged):
    rec = assistant(k[0], k[1], session=sess, sidechain=side, u=usage(inp=inp, out=out), ts=ts, block=block)
    if logged is not None:
        rec["costUSD"] = logged          # some Claude Code versions log their own price
    return rec


record = st.one_of(
    st.builds(_response, st.sampled_from(KEYS), st.sampled_from([100, 2000]), st.integers(1, 3), st.booleans(),
              st.sampled_from(["s1", "s2", "s3"]), st.sampled_from(TIMES), st.sampled_from(["text", "thinking"]),
              st.sampled_from([None, None, 0.5])),
    st.builds(lambda pre, sess: boundary(pre, session=sess), st.sampled_from([50_000, 90_000]),
              st.sampled_from(["s1", "s2"])),
    st.builds(lambda sess: user(session=sess, isCompactSummary=True), st.sampled_from(["s1", "s2"])),
    st.just('{"type": "assistant", "message": {"usage": {"input_tokens": -'),      # corrupt
)
FILES = ["p/a.jsonl", "p/b.jsonl", "p/a/subagents/agent-x.jsonl", "q/c.jsonl"]
step = st.one_of(
    st.tuples(st.just("append"), st.sampled_from(FILES), st.lists(record, min_size=1, max_size=3)),
    st.tuples(st.just("half"), st.sampled_from(FILES), record),        # a line without its newline yet
    st.tuples(st.just("rewrite"), st.sampled_from(FILES), st.lists(record, max_size=2)),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(step, min_size=1, max_size=6),
       report=st.sampled_from([(), ("session",), ("blocks",), ("daily", "--debug"), ("monthly", "--mode", "display")]))
def test_any_history_of_appends_reads_as_a_cold_run(tmp_path_factory, monkeypatch, steps, report):
    base = tmp_path_factory.mktemp("history")
    root = base / "projects"
    monkeypatch.setenv("CTXTUI_HOME", str(base / "home"))
    argv = (*report, str(root), "--utc", *(("--now", "2025-06-15T01:00:00Z") if report == ("blocks",) else ()))
    for kind, name, payload in steps:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if kind == "append":
            append(path, [json.dumps(r) if isinstance(r, dict) else r for r in payload])
        elif kind == "half":
            append(path, [], tail=json.dumps(payload) if isinstance(payload, dict) else payload)
        else:
            write_log(path, payload)
        got, _ = run_json(*argv)
        with monkeypatch.context() as m:
            m.setenv("CTXTUI_HOME", str(base / f"cold-{len(list(base.glob('cold-*')))}"))
            want, _ = run_json(*argv)
        assert got == want


def test_the_console_script_runs_usage_straight_from_its_module(tmp_path, home):
    """`ctxtui usage` is run again and again: the launcher goes straight to app.cli.usage, without
    the dispatcher (argparse's whole parser of ctxtui) and the process guard (ctypes), and nothing
    on its path loads dataclasses (with inspect) or typing; a repeated report then reads the
    appended response."""
    import subprocess
    import sys
    from pathlib import Path

    root = tmp_path / "projects"
    log = write_log(root / "p" / "s1.jsonl", [assistant("m1", "r1", session="s1", u=usage(inp=100, out=10))])
    code = ("import sys; from app.cli import launcher; check = len(sys.argv) > 2; "
            "sys.argv = ['ctxtui', 'usage', sys.argv[1], '--json']; "
            "rc = launcher.main(); bad = [m for m in ('app.cli.main', 'ctypes', 'textual', 'dataclasses', 'inspect', "
            "'typing') if m in sys.modules]; "
            "print(bad, file=sys.stderr); sys.exit(rc or (3 if bad and check else 0))")

    def total(*check: str) -> int:
        r = subprocess.run([sys.executable, "-c", code, str(root), *check], capture_output=True, text=True,
                           timeout=60, env={**os.environ, "CTXTUI_HOME": str(home)},
                           cwd=Path(__file__).resolve().parents[3])
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)["totals"]["input_tokens"]

    assert total() == 100           # the first run learns the model's rates: genai-prices loads then
    append(log, [assistant("m2", "r2", session="s1", u=usage(inp=50, out=10))])
    assert total("check") == 150


def test_states_of_many_option_sets_are_pruned_to_the_newest(tmp_path, home):
    root = tmp_path / "projects"
    write_log(root / "p" / "s1.jsonl", [assistant("m1", "r1", session="s1", u=usage(inp=100, out=10))])
    for day in range(1, report_cache.MAX_STATES + 5):
        run_json(str(root), "--since", f"2025-05-{day:02d}")
    assert len(_state_files(home)) == report_cache.MAX_STATES
