"""The session log: append, resume exactly, survive damage, keep files private, never hold the key."""
from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_core.sessions import paths
from agent_core.pricing.tally import CostTally
from agent_core.events import Compaction
from agent_core.logs.discover import latest_session, list_sessions
from agent_core.sessions.session_log import REDACTED, SessionLog
from agent_core.sessions.session_reader import SessionReplay, load_session
from compaction.entry import Entry, assistant, boundary, project, tool_result_block, user
from compaction.pipeline import PipelineState
from compaction.validate import validate_history
from tests.strategies import histories
from tests.hypothesis_budget import examples

KEY = "sk-ant-api03-SECRETSECRETSECRET-0123456789"
ROOT = Path(__file__).resolve().parents[3]


def dicts(entries):
    return [e.to_dict() for e in entries]


def small_history() -> list[Entry]:
    return [
        user("list the files"),
        assistant([{"type": "text", "text": "looking"},
                   {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"command": "ls"}}],
                  response_id="msg_1", usage={"input_tokens": 10, "output_tokens": 5}),
        user([tool_result_block("toolu_1", "a.py\nb.py\n" * 50)]),
        assistant("two files", response_id="msg_2", usage={"input_tokens": 20, "output_tokens": 3}),
        user("read a.py"),
        assistant([{"type": "tool_use", "id": "toolu_2", "name": "read_file", "input": {"path": "a.py"}}],
                  response_id="msg_3"),
        user([tool_result_block("toolu_2", "print('hi')\n" * 40)]),
        assistant("it prints hi", response_id="msg_4"),
    ]


def compacted(entries: list[Entry]) -> list[Entry]:
    """A rewrite like the pipeline's: drop the first rounds, add a boundary and a summary, clear a
    kept result (same uuid, new content)."""
    cleared = entries[6].with_content([tool_result_block("toolu_2", "[Old result of read_file cleared]")],
                                      cleared=True)
    return [boundary("auto", 900, 200, "/t/x.jsonl", "llm"), user("Summary: listed files.", kind="summary"),
            entries[4], entries[5], cleared, entries[7]]


# ------------------------------------------------------------------ basics

def test_create_writes_meta_and_private_files(tmp_path):
    old = os.umask(0)  # even with a permissive umask the log must be private
    try:
        log = SessionLog.create(tmp_path, {"model": "demo", "workspace": str(tmp_path)})
        log.append_entry(user("hi"))
        log.close()
    finally:
        os.umask(old)
    assert paths.is_session_id(log.session_id)
    assert log.path == tmp_path / "sessions" / f"{log.session_id}.jsonl"
    assert stat.S_IMODE(log.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(tmp_path.stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "sessions").stat().st_mode) == 0o700
    first = json.loads(log.path.read_text().splitlines()[0])
    assert first["t"] == "meta" and first["model"] == "demo" and first["session_id"] == log.session_id
    assert first["v"] == 2 and first["created"].endswith("Z") and "version" in first


def test_session_ids_sort_by_time():
    a, b = paths.new_session_id(1_800_000_000), paths.new_session_id(1_800_000_001)
    assert a < b and paths.is_session_id(a)
    assert paths.new_session_id(0).startswith("19700101T000000-")
    with pytest.raises(ValueError):
        paths.session_log_path(Path("/x"), "../etc")


def test_every_record_is_one_line_flushed_immediately(tmp_path):
    log = SessionLog.create(tmp_path, {})
    e = user("line one\nline two")
    log.append_entry(e)
    # read by another handle before close: nothing buffered in the writer
    lines = log.path.read_text().splitlines()
    assert len(lines) == 2 and json.loads(lines[1]) == {"t": "entry", "entry": e.to_dict()}
    log.close()


def test_round_trip_with_a_rewrite_in_between(tmp_path):
    h = small_history()
    log = SessionLog.create(tmp_path, {"model": "demo"})
    for e in h:
        log.append_entry(e)
    log.append_event(Compaction(layer="llm", trigger="auto", tokens_before=900, tokens_after=200))
    rewritten = compacted(h)
    log.append_history(rewritten)
    more = [user("and now?"), assistant("done", response_id="msg_5")]
    for e in more:
        log.append_entry(e)
    tracker = CostTally()
    tracker.add("claude-sonnet-4", {"input_tokens": 100, "output_tokens": 10})
    ps = PipelineState({"tool_result_budget": {"frozen": {"toolu_1": "preview"}}, "collapse": {"store": [1, 2]}})
    log.append_state({"pipeline": ps.to_dict(), "cost": tracker.to_dict(), "permissions": {"bash": "always"}})
    log.append_state({"notes": "# notes\n- listed files"})
    log.close()

    s = load_session(log.path)
    assert s.warnings == [] and s.skipped == 0
    assert dicts(s.entries) == dicts(rewritten + more)
    assert validate_history(project(s.entries)) == []
    # every entry ever made is still there, in its original form
    by_uuid = {e.uuid: e for e in s.all_entries}
    assert {e.uuid for e in h + rewritten + more} == set(by_uuid)
    assert by_uuid[h[6].uuid].to_dict() == h[6].to_dict()  # cleared in the working history, original kept
    assert by_uuid[h[2].uuid].to_dict() == h[2].to_dict()  # dropped by the rewrite, kept in the log
    assert PipelineState.from_dict(s.state["pipeline"]).layers == ps.layers
    restored = CostTally.from_dict(s.state["cost"])
    assert restored.by_model() == tracker.by_model() and restored.total_usd == tracker.total_usd
    assert s.state["permissions"] == {"bash": "always"} and s.state["notes"].startswith("# notes")
    assert [ev["type"] for ev in s.events] == ["compaction"] and s.events[0]["tokens_after"] == 200
    assert s.meta["model"] == "demo" and s.session_id == log.session_id


def test_history_record_carries_only_what_changed(tmp_path):
    h = small_history()
    log = SessionLog.create(tmp_path, {})
    for e in h:
        log.append_entry(e)
    rewritten = compacted(h)
    log.append_history(rewritten)
    log.close()
    rec = json.loads(log.path.read_text().splitlines()[-1])
    assert rec["t"] == "history" and rec["uuids"] == [e.uuid for e in rewritten]
    # the boundary, the summary and the cleared result; not the untouched entries
    assert set(rec["changed"]) == {rewritten[0].uuid, rewritten[1].uuid, h[6].uuid}


def test_resume_then_continue_appending(tmp_path):
    h = small_history()
    log = SessionLog.create(tmp_path, {})
    for e in h[:4]:
        log.append_entry(e)
    rewritten = compacted(h)[:2] + h[:4]
    log.append_history(rewritten)
    log.close()

    log2 = SessionLog.open(tmp_path, log.session_id)
    assert dicts(log2.loaded.entries) == dicts(rewritten)
    now = log2.working + h[4:]
    log2.sync(now)                           # only appended: entry records, no history record
    assert all(json.loads(x)["t"] == "entry" for x in log2.path.read_text().splitlines()[-4:])
    log2.close()
    assert dicts(load_session(log.path).entries) == dicts(now)


def test_sync_chooses_entry_or_history_records(tmp_path):
    h = small_history()
    log = SessionLog.create(tmp_path, {})
    c = compacted(h)
    log.sync(h[:3])
    log.sync(h[:5])
    log.sync(c)
    log.sync(list(c))                        # nothing new: writes nothing
    log.sync([Entry.from_dict(e.to_dict()) for e in c])   # equal copies count as the same entries
    log.close()
    kinds = [json.loads(x)["t"] for x in log.path.read_text().splitlines()]
    assert kinds == ["meta"] + ["entry"] * 5 + ["history"]
    assert dicts(load_session(log.path).entries) == dicts(c)


def test_reverting_an_entry_to_an_older_version_after_resume(tmp_path):
    """A uuid whose newest logged version differs from its first must be carried when reverted."""
    e = user([tool_result_block("t1", "original")])
    log = SessionLog.create(tmp_path, {})
    log.append_entry(user("q"))
    log.append_entry(e)
    log.append_history([log.working[0], e.with_content([tool_result_block("t1", "cleared")])])
    log.append_history([log.working[0]])     # dropped
    log.close()
    log2 = SessionLog.open(tmp_path, log.session_id, repair=False)   # an orphan result on purpose
    target = [log2.working[0], e]            # the original version comes back
    log2.append_history(target)
    log2.close()
    assert dicts(load_session(log.path, repair=False).entries) == dicts(target)


# ------------------------------------------------------------------ property: exact rebuild

ops = st.lists(st.sampled_from(["append", "clear", "drop", "summarize", "reopen", "revert"]), min_size=1, max_size=25)


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(h=histories(max_rounds=12), plan=ops, data=st.data())
def test_rebuild_is_exact_for_any_sequence_of_changes(h, plan, data):
    with tempfile.TemporaryDirectory() as d:
        home = Path(d)
        log = SessionLog.create(home, {})
        pending = list(h)
        working: list[Entry] = []
        seen: dict[str, list[Entry]] = {}
        for op in plan:
            if op == "append" and pending:
                k = data.draw(st.integers(1, max(1, len(pending))))
                working = working + pending[:k]
                pending = pending[k:]
                log.sync(working)
            elif op == "clear" and working:
                i = data.draw(st.integers(0, len(working) - 1))
                working = working[:i] + [working[i].with_meta(cleared=len(seen))] + working[i + 1:]
                log.sync(working)
            elif op == "drop" and len(working) > 2:
                i = data.draw(st.integers(1, len(working) - 1))
                working = working[:1] + working[i:]
                log.sync(working)
            elif op == "summarize" and working:
                working = [boundary("auto", 1, 1, None, "llm"), user("summary", kind="summary")] + working[-2:]
                log.sync(working)
            elif op == "revert" and seen:
                # by position of first appearance: uuids are random, so sorting them would make the
                # draw depend on state hypothesis cannot replay (a FlakyStrategyDefinition)
                keys = list(seen)
                u = keys[data.draw(st.integers(0, len(keys) - 1))]
                old = seen[u][0]
                if all(e.uuid != u for e in working):
                    working = working + [old]
                    log.sync(working)
            elif op == "reopen":
                log.close()
                log = SessionLog.open(home, log.session_id, repair=False)   # histories here need not be valid
                assert dicts(log.loaded.entries) == dicts(working)
            for e in working:
                seen.setdefault(e.uuid, []).append(e)
        log.close()
        s = load_session(log.path, repair=False)
        assert s.warnings == []
        assert dicts(s.entries) == dicts(working)


# ------------------------------------------------------------------ damage

def _write_session(home: Path, n: int = 6) -> tuple[SessionLog, list[Entry]]:
    log = SessionLog.create(home, {"model": "demo"})
    h = small_history()[:n]
    for e in h:
        log.append_entry(e)
    return log, h


def test_truncated_last_line_is_skipped_and_resume_continues(tmp_path):
    log, h = _write_session(tmp_path)
    extra = user("this line will be cut")
    log.append_entry(extra)
    log.close()
    data = log.path.read_bytes()
    last_start = data.rstrip(b"\n").rfind(b"\n") + 1
    # (h ends with an unanswered tool call: replay as logged, without the repair resume makes)
    for cut in (last_start + 1, last_start + 10, len(data) - 2):
        log.path.write_bytes(data[:cut])
        s = load_session(log.path, repair=False)
        assert dicts(s.entries) == dicts(h)
        assert s.skipped == 1 and "cut off" in s.warnings[0]
    # a record that lost only its newline is still whole
    log.path.write_bytes(data[:-1])
    assert dicts(load_session(log.path, repair=False).entries) == dicts(h + [extra])

    log.path.write_bytes(data[:last_start + 10])
    log2 = SessionLog.open(tmp_path, log.session_id, repair=False)
    assert dicts(log2.loaded.entries) == dicts(h)
    later = user("after the crash")
    log2.append_entry(later)
    log2.close()
    s = load_session(log.path, repair=False)
    assert dicts(s.entries) == dicts(h + [later]) and s.skipped == 0   # open cut the cut-off line away


def test_corrupt_middle_line_is_skipped_with_a_warning(tmp_path):
    log, h = _write_session(tmp_path)
    log.close()
    lines = log.path.read_bytes().split(b"\n")
    lines[3] = b'{"t": "entry", "entry": {"uuid": '          # broken JSON
    lines[4] = b"\xff\xfe not utf-8"
    log.path.write_bytes(b"\n".join(lines))
    s = load_session(log.path, repair=False)
    assert dicts(s.entries) == dicts([h[0], h[1]] + h[4:])
    assert s.skipped == 2
    assert any("line 4: not valid JSON" in w for w in s.warnings)
    assert any("line 5: not UTF-8" in w for w in s.warnings)


def test_odd_records_never_raise(tmp_path):
    r = SessionReplay()
    for line in ['[1,2]', '{"t": "entry"}', '{"t": "entry", "entry": {"uuid": "x", "message": {"role": "user", '
                 '"content": []}, "kind": "bogus"}}', '{"t": "wat"}', '{"t": "history", "uuids": ["nope"]}',
                 '', 'null', '{"t": "event", "event": 3}']:
        r.feed_line(line)
    s = r.result()
    # the history record naming only entries the log does not hold is skipped, like the unreadable lines
    assert s.entries == [] and s.skipped == 6 and len(s.warnings) == 6
    assert s.events == [{"value": 3}]


def test_missing_meta_is_a_warning_not_an_error(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_text(json.dumps({"t": "entry", "entry": user("hi").to_dict()}) + "\n")
    s = load_session(p)
    assert len(s.entries) == 1 and "no meta line" in s.warnings[0]


def test_sigkill_while_writing_loses_no_completed_entry(tmp_path):
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from agent_core.sessions.session_log import SessionLog\n"
        "from compaction.entry import user\n"
        "log = SessionLog.create(Path(sys.argv[1]), {}, session_id='20260101T000000-abcdef')\n"
        "i = 0\n"
        "while True:\n"
        "    log.append_entry(user(f'entry {i} ' + 'x' * 5000))\n"
        "    print(i, flush=True)\n"
        "    i += 1\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        done = -1
        for line in proc.stdout:
            done = int(line)
            if done >= 30:
                break
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    s = load_session(paths.session_log_path(tmp_path, "20260101T000000-abcdef"))
    texts = [e.text() for e in s.entries]
    assert len(texts) > done and all(t.startswith(f"entry {i} ") for i, t in enumerate(texts))
    assert s.skipped <= 1


# ------------------------------------------------------------------ secrets

def test_no_key_in_any_file(tmp_path, monkeypatch):
    env_key = "sk-ant-env-OTHERSECRET-987654321"
    monkeypatch.setenv("ANTHROPIC_API_KEY", env_key)
    log = SessionLog.create(tmp_path, {"model": "demo", "oops": KEY}, secrets=[KEY, "short"])
    log.append_entry(user(f"my key is {KEY} and {env_key}, in short"))
    log.append_entry(assistant([{"type": "tool_use", "id": "t", "name": "bash",
                                 "input": {"command": f"echo {json.dumps(KEY)}"}}], response_id="m"))
    log.append_history([user(f"summary mentioning {KEY}", kind="summary")])
    log.append_state({"notes": f"key={KEY}"})
    log.append_event({"type": "error", "message": f"401 for key {KEY}"})
    log.close()
    assert log.redactions >= 6
    for f in tmp_path.rglob("*"):
        if f.is_file():
            data = f.read_bytes()
            assert KEY.encode() not in data and env_key.encode() not in data
    assert REDACTED in log.path.read_text()
    s = load_session(log.path)
    assert s.warnings == [] and REDACTED in s.entries[0].text()
    assert "short" in log.path.read_text()  # too short to be a secret: left alone


# ------------------------------------------------------------------ listing

def test_list_and_latest(tmp_path):
    assert list_sessions(tmp_path) == [] and latest_session(tmp_path) is None
    a = SessionLog.create(tmp_path, {"model": "m-a"}, now=1_800_000_000)
    a.append_entry(user("first prompt of A   with   spaces"))
    a.close()
    b = SessionLog.create(tmp_path, {"model": "m-b"}, now=1_800_000_100)
    b.close()
    (paths.sessions_dir(tmp_path) / "notes.jsonl").write_text("{}")   # not a session: ignored
    os.utime(a.path, (1_900_000_000, 1_900_000_000))                  # A was written last
    os.utime(b.path, (1_850_000_000, 1_850_000_000))
    infos = list_sessions(tmp_path)
    assert [i.session_id for i in infos] == [a.session_id, b.session_id]
    assert infos[0].title == "first prompt of A with spaces" and infos[0].model == "m-a"
    assert infos[1].title is None and infos[1].created.startswith("2027-")
    assert latest_session(tmp_path).session_id == a.session_id


def test_open_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no session"):
        SessionLog.open(tmp_path, "20260101T000000-000000")
    log = SessionLog.create(tmp_path, {}, session_id="20260101T000000-000001")
    log.close()
    with pytest.raises(FileExistsError):
        SessionLog.create(tmp_path, {}, session_id="20260101T000000-000001")
    with pytest.raises(ValueError):
        log.append_entry(user("after close"))
