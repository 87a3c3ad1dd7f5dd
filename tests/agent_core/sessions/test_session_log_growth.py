"""Issue 23: a long session's log grows with what the session adds (state as changes, layer state
pruned to the live history), resume reads it in one pass holding only the live history, and a
log written before `delta` records (format 1) still resumes the same."""
from __future__ import annotations

import gzip
import json
import random
import tracemalloc
from pathlib import Path

import pytest

from agent_core.sessions.paths import session_log_path
from agent_core.sessions.session_log import SessionLog
from agent_core.sessions.session_reader import load_session
from agent_core.sessions.state_delta import apply_op, diff
from compaction import Entry, project, tool_result_block, validate_history
from agent_core.config import load_config
from tests.agent_core.sessions.log_session_helpers import assert_resumes_as_left, demo_session, sizes
from tests.agent_helpers import collect, demo_agent, user_dirs
from tests.demo_project import build

FIXTURES = Path(__file__).parent / "fixtures"
@pytest.mark.slow
async def test_the_log_grows_with_the_entries_not_with_turns_times_state(tmp_path):
    # format 1 wrote the whole state after nearly every call: 4.2x the entries after 60 turns,
    # 5.5x after 100, growing (593 MB after 1,000); now about 1.5x, flat
    agent = await demo_session(tmp_path, 60)
    total, entries = sizes(agent.session.path)
    assert total <= 2 * entries, (total, entries)
    assert_resumes_as_left(agent)
    layer = agent.pipeline.snapshot()["layers"]["tool_result_budget"]
    live = {b.get("tool_use_id") for e in agent.entries for b in e.content if b.get("type") == "tool_result"}
    assert set(layer.get("replaced", {})) <= live


@pytest.mark.slow
async def test_a_thousand_turns_log_at_most_three_times_its_entries(tmp_path):
    agent = await demo_session(tmp_path, 1000)
    total, entries = sizes(agent.session.path)
    assert total <= 3 * entries, (total, entries)
    assert_resumes_as_left(agent)


# ----- changes as operations ----------------------------------------------------------------------

def mutate(rng: random.Random, v, depth=0):
    if isinstance(v, dict):
        v = dict(v)
        for k in list(v):
            r = rng.random()
            if r < 0.15:
                del v[k]
            elif r < 0.5:
                v[k] = mutate(rng, v[k], depth + 1)
        if rng.random() < 0.3:
            v[f"k{rng.randrange(50)}"] = rng.choice([None, 1, 2.5, "x", [1, 2], {"a": True}])
        return v
    if isinstance(v, list):
        v = list(v)
        for _ in range(rng.randrange(3)):
            op = rng.randrange(3)
            if op == 0 and v:
                del v[rng.randrange(len(v))]
            elif op == 1:
                v.insert(rng.randrange(len(v) + 1), rng.choice([0, 1, [3], {"b": 1}, None]))
            elif v:
                i = rng.randrange(len(v))
                v[i] = mutate(rng, v[i], depth + 1)
        return v
    return rng.choice([v, None, 0, 1.0, "y", True])


def test_diff_then_apply_rebuilds_the_new_state():
    rng = random.Random(23)
    state = {"pipeline": {"layers": {"a": {"seq": 1, "recent": list(range(30)), "d": {"x": 1, "y": [1, 2]}}}},
             "plot": [[i, i * 10, False] for i in range(240)], "turns": 1}
    for _ in range(300):
        new = {k: mutate(rng, v) for k, v in state.items()}
        copy = json.loads(json.dumps(state))
        for k in new:
            for op in diff(copy[k], new[k], (k,)):
                apply_op(copy, json.loads(json.dumps(op)))
        assert copy == new and [list(copy[k]) for k in copy if isinstance(copy[k], dict)] == \
            [list(new[k]) for k in new if isinstance(new[k], dict)]   # keys in the same order
        state = new
    window = [[i, i, False] for i in range(240)]
    slid = window[3:] + [[240, 1, True], [241, 2, False], [242, 3, False]]
    ops = diff(window, slid, ("plot",))
    assert len(json.dumps(ops)) < 150     # a sliding window costs what slid in, not the window


def test_a_state_change_is_logged_as_a_change(tmp_path):
    log = SessionLog.create(tmp_path, {"model": "demo"})
    big = {"layers": {"notes": {"items": [f"item {i} " * 20 for i in range(200)], "seq": 0}}}
    log.append_state({"pipeline": big, "turns": 0})
    for i in range(1, 30):
        big["layers"]["notes"]["seq"] = i
        big["layers"]["notes"]["items"].append(f"new {i}")
        log.append_state({"pipeline": big, "turns": i})
    log.close()
    lines = log.path.read_bytes().splitlines()
    assert sum(len(x) for x in lines[2:]) < len(lines[1]), "29 small changes cost less than one copy"
    assert json.loads(lines[-1])["t"] == "delta"
    s = load_session(log.path)
    assert s.warnings == [] and s.state == {"pipeline": big, "turns": 29}


# ----- reading in one pass, holding the live history ---------------------------------------------

def load_peak(path: Path):
    tracemalloc.start()
    try:
        s = load_session(path)
        return s, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def v1_log(state: Path) -> tuple[Path, dict]:
    """The format-1 fixture (4 demo turns, written before `delta` records) in the state folder
    `state`, and what the format-1 reader rebuilt from it."""
    expected = json.loads(gzip.decompress((FIXTURES / "v1_demo_session.expected.json.gz").read_bytes()))
    path = session_log_path(state, expected["session_id"])
    path.parent.mkdir(parents=True)
    path.write_bytes(gzip.decompress((FIXTURES / "v1_demo_session.jsonl.gz").read_bytes()))
    return path, expected


def test_resume_reads_the_log_one_line_at_a_time(tmp_path):
    # a format-1 log inflated with whole state snapshots, as 1,000 turns left one: reading it must
    # not hold the file (format 1's reader held it twice: the bytes and their lines)
    path, expected = v1_log(tmp_path / "home")
    lines = path.read_bytes().splitlines(keepends=True)
    state = max((x for x in lines if x.startswith(b'{"t":"state"')), key=len)
    with open(path, "ab") as f:
        while f.tell() < 8_000_000:
            f.write(state)
    size = path.stat().st_size
    s, peak = load_peak(path)
    assert [e.to_dict() for e in s.entries] == expected["entries"] and s.warnings == []
    assert peak < size / 8, (peak, size)


def test_entries_that_left_the_history_are_let_go(tmp_path):
    # format 2: a history record only names entries of the history or carries them, so the reader
    # keeps the live history only (format 1 kept every entry ever logged)
    log = SessionLog.create(tmp_path, {"model": "demo"})
    working: list[Entry] = []
    for r in range(150):
        tid = f"toolu_{r}"
        working += [Entry({"role": "user", "content": [{"type": "text", "text": f"step {r}"}]}),
                    Entry({"role": "assistant", "content": [{"type": "tool_use", "id": tid, "name": "bash",
                                                             "input": {"command": "ls"}}]}),
                    Entry({"role": "user", "content": [tool_result_block(tid, f"{r} " * 20_000)]})]
        for e in working[-3:]:
            log.append_entry(e)
        if len(working) > 9:
            working = working[-3:]
            log.append_history(working)
    log.append_history(working)   # nothing changed: nothing carried
    log.close()
    size = log.path.stat().st_size
    s, peak = load_peak(log.path)
    assert [e.uuid for e in s.entries] == [e.uuid for e in working] and s.warnings == []
    assert set(s.latest) == {e.uuid for e in working}
    assert peak < size / 8, (peak, size)
    assert len(s.all_entries) == 450      # the log still holds every one, read again on demand


def test_an_entry_back_in_the_history_is_logged_again(tmp_path):
    log = SessionLog.create(tmp_path, {"model": "demo"})
    a, b = Entry({"role": "user", "content": [{"type": "text", "text": "a"}]}), \
        Entry({"role": "user", "content": [{"type": "text", "text": "b"}]})
    log.append_entry(a)
    log.append_history([b])
    log.append_history([a, b])
    log.close()
    last = json.loads(log.path.read_bytes().splitlines()[-1])
    assert list(last["changed"]) == [a.uuid]
    assert [e.uuid for e in load_session(log.path).entries] == [a.uuid, b.uuid]


# ----- damage: a torn last line, an unreadable change ---------------------------------------------

def test_an_entry_read_late_is_checked_as_any_other(tmp_path):
    # entry lines are read once the log is (only those still in the history): a damaged one
    # still costs only itself, and one that replaced a good version leaves that version
    log = SessionLog.create(tmp_path, {"model": "demo"})
    a, b = Entry({"role": "user", "content": [{"type": "text", "text": "a"}]}), \
        Entry({"role": "assistant", "content": [{"type": "text", "text": "b"}]})
    log.append_entry(a)
    log.append_entry(b)
    log.close()
    evil = {**a.to_dict(), "message": {"role": "system", "content": [{"type": "text", "text": "evil"}]}}
    torn = json.dumps({"t": "entry", "entry": user_entry("c").to_dict()}, separators=(",", ":"))[:90]
    with open(log.path, "a") as f:
        f.write(json.dumps({"t": "entry", "entry": evil}, separators=(",", ":")) + "\n" + torn + "\n")
    s = load_session(log.path)
    assert [e.to_dict() for e in s.entries] == [a.to_dict(), b.to_dict()]
    assert s.skipped == 2 and sorted(w.split(":")[0] for w in s.warnings) == ["line 4", "line 5"]
    assert "role is 'system'" in " ".join(s.warnings) and "not valid JSON" in " ".join(s.warnings)


def test_a_history_record_read_late_leaves_out_only_what_it_cannot_read(tmp_path):
    log = SessionLog.create(tmp_path, {"model": "demo"})
    a, b = user_entry("a"), Entry({"role": "assistant", "content": [{"type": "text", "text": "b"}]})
    log.append_entry(a)
    log.append_entry(b)
    summary = Entry({"role": "user", "content": [{"type": "text", "text": "summary"}]}, kind="summary")
    log.append_history([summary, b])
    c = user_entry("c")
    log.append_entry(c)
    log.close()
    lines = log.path.read_bytes().splitlines(keepends=True)
    assert lines[3].startswith(b'{"t":"history"')
    lines[3] = lines[3].replace(b'"kind":"summary"', b'"kind":"bogus"')
    log.path.write_bytes(b"".join(lines))
    s = load_session(log.path)
    assert [e.uuid for e in s.logged] == [b.uuid, c.uuid]     # the summary it carried is left out
    assert s.skipped == 1 and "unknown entry kind 'bogus'" in s.warnings[0]


def user_entry(text: str) -> Entry:
    return Entry({"role": "user", "content": [{"type": "text", "text": text}]})


def plot_log(tmp_path: Path, n: int) -> tuple[SessionLog, list]:
    log = SessionLog.create(tmp_path, {"model": "demo"})
    log.append_entry(Entry({"role": "user", "content": [{"type": "text", "text": "hi"}]}))
    plot: list = []
    for i in range(n):
        plot = (plot + [[i, 100 + i, False]])[-40:]
        log.append_state({"context_history": plot, "turns": i})
    return log, plot


def test_a_torn_last_change_resumes_from_the_one_before(tmp_path):
    log, plot = plot_log(tmp_path, 100)
    log.close()
    lines = log.path.read_bytes().splitlines(keepends=True)
    j = max(i for i, x in enumerate(lines) if x.startswith(b'{"t":"delta"'))   # append j - 2
    log.path.write_bytes(b"".join(lines[:j]) + lines[j][:-25])   # the crash cut it off mid-way
    s = load_session(log.path)
    assert s.cut_tail and s.state["turns"] == j - 3 and s.state["context_history"] == plot_after(j - 3)
    again = SessionLog.open(tmp_path, log.session_id)
    assert again.loaded.state["turns"] == j - 3
    again.append_state({"context_history": plot, "turns": 99})     # a run's first state: whole
    again.append_state({"turns": 100})                             # then changes
    again.close()
    s = load_session(log.path)
    assert s.warnings == [] and s.state == {"context_history": plot, "turns": 100}
    assert [json.loads(x)["t"] for x in log.path.read_bytes().splitlines()[-2:]] == ["state", "delta"]


def plot_after(i: int) -> list:
    return [[k, 100 + k, False] for k in range(max(0, i - 39), i + 1)]


def test_a_change_that_cannot_apply_drops_the_part_until_it_is_whole_again(tmp_path):
    log, plot = plot_log(tmp_path, 300)
    log.close()
    lines = log.path.read_bytes().splitlines(keepends=True)
    whole = [i for i, x in enumerate(lines) if x.startswith(b'{"t":"state"')]
    c = next(i for i in whole if all(x.startswith(b'{"t":"delta"') and b'"splice"' in x for x in lines[i + 1:i + 4]))
    assert c != whole[-1]
    damaged = b'{"t":"delta","at":1,"ops":[["splice",["context_history"],0,1,[],5]]}\n'
    # after the last whole copy: the part is dropped, never a wrong list
    log.path.write_bytes(b"".join([*lines[:c + 1], damaged, *lines[c + 2:c + 4]]))
    s = load_session(log.path)
    assert any("context_history" in w and "saved whole" in w for w in s.warnings), s.warnings
    assert "context_history" not in s.state and s.state["turns"] == c + 3 - 2
    # before a later whole copy: moot
    log.path.write_bytes(b"".join([*lines[:c + 1], damaged, *lines[c + 2:]]))
    s = load_session(log.path)
    assert s.warnings == [] and s.state == {"context_history": plot, "turns": 299}


# ----- format 1 --------------------------------------------------------------------------------------

async def test_a_format_1_log_resumes_with_the_same_history_cost_permissions_and_turns(tmp_path):
    ws = build(tmp_path / "ws")
    home = str(tmp_path / "home")
    path, expected = v1_log(load_config({"model": "demo", "home": home}, environ=user_dirs(), workspace=ws).state_dir)
    s = load_session(path)
    assert s.warnings == [] and s.meta["v"] == 1
    assert [e.to_dict() for e in s.entries] == expected["entries"]
    assert s.state == expected["state"]
    assert sum(e.get("type") == "compaction" for e in s.events) == expected["compactions"]
    agent = demo_agent(ws, home=home, allow=["all"], resume=expected["session_id"])
    assert [e.to_dict() for e in agent.entries] == expected["entries"]
    assert agent.turns == 4 and agent.permissions.to_dict() == {"always": ["write_file"]}
    assert agent.cost.to_dict() == expected["state"]["cost"]
    assert len(agent.compactions) == expected["compactions"]
    before = agent.cost.total_usd
    events = await collect(agent.run("how does the cost tally work?"))
    assert events[-1].stop_reason == "end_turn"
    await agent.aclose()
    assert agent.turns == 5 and agent.cost.total_usd > before
    assert validate_history(project(agent.entries)) == []
    assert_resumes_as_left(agent)    # format 1 lines, then format 2 ones
