"""Resume reads the log's tail: the last whole state carries the writer's checkpoint index (where
the working history's entries and the kept events are), the reader seeks to those lines and reads
on from the checkpoint; anything that does not check out is read the whole way, with the same
result."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_core.sessions.session_reader import SessionReplay
from tests.agent_core.sessions.log_session_helpers import PROMPTS, assert_resumes_as_left, demo_session
from tests.agent_helpers import collect, demo_agent


def full_read(path: Path):
    r = SessionReplay()
    r.use_index = False
    r.read(path)
    return r.result(path)


def indexed(path: Path):
    r = SessionReplay()
    r.read(path)
    return r, r.result(path)


def same(a, b) -> None:
    assert [e.to_dict() for e in a.entries] == [e.to_dict() for e in b.entries]
    assert [e.to_dict() for e in a.logged] == [e.to_dict() for e in b.logged]
    assert a.state == b.state and a.meta == b.meta
    assert a.events == b.events
    assert [e for e in a.events if e.get("type") == "compaction"] == [e for e in b.events
                                                                      if e.get("type") == "compaction"]
    assert a.calls_after_state == b.calls_after_state
    assert a.warnings == b.warnings and a.skipped == b.skipped and a.cut_tail == b.cut_tail
    assert a.index == b.index


def checkpoints(path: Path) -> list[tuple[int, dict]]:
    out, off = [], 0
    with open(path, "rb") as f:
        for line in f:
            if line.startswith(b'{"t":"state",') and b',"all":true,' in line[:60]:
                out.append((off, json.loads(line)))
            off += len(line)
    return out


async def resume_turns(tmp_path: Path, turns: int, start: int = 0):
    agent = demo_agent(tmp_path / "project", home=str(tmp_path / "home"), allow=["all"], continue_=True)
    for i in range(start, start + turns):
        events = await collect(agent.run(f"{PROMPTS[i % len(PROMPTS)]} (#{i})"))
        assert events[-1].stop_reason == "end_turn"
    await agent.aclose()
    return agent


@pytest.mark.slow
async def test_resume_reads_the_tail_not_the_file(tmp_path):
    agent = await demo_session(tmp_path, 30)
    path = agent.session.path
    r, s = indexed(path)
    assert r.via_index and s.index is not None
    same(s, full_read(path))
    assert_resumes_as_left(agent)
    assert any(e.get("type") == "compaction" for e in s.events)
    early = s.bytes_read
    # 60 more turns over two resumed runs: the file triples, what resume reads does not grow with it
    agent = await resume_turns(tmp_path, 30, 30)
    agent = await resume_turns(tmp_path, 30, 60)
    path = agent.session.path
    r, s = indexed(path)
    assert r.via_index
    same(s, full_read(path))
    assert_resumes_as_left(agent)
    size = path.stat().st_size
    assert s.bytes_read < 3 * (4 << 20) and s.bytes_read < 3 * max(early, 1 << 20), (s.bytes_read, early, size)
    assert len([e for e in s.events if e.get("type") == "compaction"]) >= 2
    # every checkpoint's index names only lines before it
    for off, rec in checkpoints(path):
        ix = rec.get("index")
        assert ix is not None
        assert all(o + n <= off for _, o, n, _ in ix["entries"]) and all(o + n <= off for o, n, _ in ix["events"])


async def test_a_wrong_index_falls_back_to_the_full_read(tmp_path):
    agent = await demo_session(tmp_path, 12)
    path = agent.session.path
    expected = full_read(path)
    data = path.read_bytes()
    off, rec = checkpoints(path)[-1]
    end = data.index(b"\n", off) + 1
    for damage in ("offset", "length", "uuid", "event", "garbage"):
        ix = json.loads(json.dumps(rec["index"]))
        if damage == "offset":
            ix["entries"][-1][1] += 7
        elif damage == "length":
            ix["entries"][0][2] -= 1
        elif damage == "uuid":
            ix["entries"][0][0] = "not-a-uuid"
        elif damage == "event":
            ix["events"] = ix["events"] + [ix["entries"][0][1:]]
        else:
            ix = {"line": "x"}
        line = json.dumps({**rec, "index": ix}, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        path.write_bytes(data[:off] + line + data[end:])
        r, s = indexed(path)
        assert r.index_failed and not r.via_index, damage
        got = full_read(path)
        assert [e.to_dict() for e in s.entries] == [e.to_dict() for e in expected.entries], damage
        assert s.state == expected.state and s.events == got.events == expected.events, damage
        assert s.calls_after_state == expected.calls_after_state and s.warnings == [], damage
        assert s.bytes_read > len(data) * 0.9, damage     # it read the whole file


async def test_a_torn_last_line_and_a_killed_run_still_resume(tmp_path):
    agent = await demo_session(tmp_path, 12)
    path = agent.session.path
    data = path.read_bytes()
    # a killed run: the last line cut mid-way
    path.write_bytes(data + data[data.rindex(b"\n", 0, len(data) - 1) + 1:][:40])
    r, s = indexed(path)
    assert r.via_index and s.cut_tail == 40
    same(s, full_read(path))
    assert [e.to_dict() for e in s.entries] == [e.to_dict() for e in agent.entries]
    # lines cut off after the checkpoint: whatever was logged whole stays
    off, _ = checkpoints(path)[-1]
    cut = data.index(b"\n", data.index(b"\n", off) + 1) + 30
    path.write_bytes(data[:cut])
    r, s = indexed(path)
    assert r.via_index
    same(s, full_read(path))
    # resuming cuts the torn line away, runs a turn, and the next resume reads the index again
    agent = await resume_turns(tmp_path, 2, 12)
    r, s = indexed(agent.session.path)
    assert r.via_index
    same(s, full_read(agent.session.path))
    assert_resumes_as_left(agent)


async def test_a_record_that_lost_its_newline(tmp_path):
    agent = await demo_session(tmp_path, 6)
    path = agent.session.path
    path.write_bytes(path.read_bytes()[:-1])
    agent = await resume_turns(tmp_path, 2, 6)
    r, s = indexed(agent.session.path)
    assert r.via_index
    same(s, full_read(agent.session.path))
    assert_resumes_as_left(agent)


def test_a_log_without_an_index_is_read_whole(tmp_path):
    from agent_core.sessions.session_log import SessionLog
    log = SessionLog.create(tmp_path, {"model": "demo"})
    log.append_state({"turns": 1})
    log.close()
    data = log.path.read_bytes()
    off = data.index(b'{"t":"state"')
    line = data[off:]
    rec = json.loads(line)
    assert "index" in rec
    rec.pop("index")
    log.path.write_bytes(data[:off] + json.dumps(rec, separators=(",", ":")).encode() + b"\n")
    r, s = indexed(log.path)
    assert not r.via_index and s.state == {"turns": 1} and s.warnings == []


async def test_damage_after_the_checkpoint_warns_as_the_full_read(tmp_path):
    agent = await demo_session(tmp_path, 12)
    path = agent.session.path
    data = path.read_bytes()
    off, _ = checkpoints(path)[-1]
    at = data.index(b"\n", data.index(b"\n", off) + 1) + 1
    path.write_bytes(data[:at] + b'{"t":"entry", oops\n' + data[at:])
    r, s = indexed(path)
    assert r.via_index and s.warnings and "not valid JSON" in s.warnings[0]
    same(s, full_read(path))
    assert s.index is None      # a damaged log is not indexed: its next resume reads it all, as before
