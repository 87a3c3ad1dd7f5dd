"""Changed files, /diff and /rewind's file restore (issue 28): the file history keeps each file as it
was before the agent's write and edit calls, per prompt; counts are against the session's start;
restore puts back exactly the files changed since the chosen prompt, refuses a planted symlink,
and survives a resume."""
from __future__ import annotations

import os
import stat
import time

import pytest
from hypothesis import given, settings, strategies as st

from agent_core.tools.base import ToolContext
from agent_core.tools.changed_files import ChangedFiles, _counts, session_diff
from agent_core.tools.file_history import FileHistory
from agent_core.tools.file_restore import apply_restore, restore_plan
from tests.agent_helpers import collect, fake_agent, make_workspace
from tests.fake_anthropic import FakeAnthropic, reply, tool_use
from tests.hypothesis_budget import examples

ALLOW = ["write_file,edit_file"]


def _edit(path, old, new):
    return reply(tool_use("edit_file", {"path": path, "old_string": old, "new_string": new}))


def _write(path, content):
    return reply(tool_use("write_file", {"path": path, "content": content}))


async def test_changed_files_count_against_the_start_and_rewind_restores_after_a_diff(tmp_path):
    ws = make_workspace(tmp_path)
    original = (ws / "README.md").read_text()
    script = [_edit("README.md", "A small project", "A tiny project\nwith two lines"), reply("edited"),
              _write("new.txt", "one\ntwo\nthree\n"), _edit("README.md", "# Sample", "# Renamed"), reply("more")]
    with FakeAnthropic(script) as fake:
        agent = fake_agent(ws, fake.base_url, allow=ALLOW)
        await collect(agent.run("edit the readme"))
        await collect(agent.run("add a file"))
        files = {f.shown: f for f in agent.changed_files().files()}
        assert set(files) == {"README.md", "new.txt"}
        assert (files["README.md"].added, files["README.md"].removed) == (3, 2)   # two prompts, one row
        assert (files["new.txt"].added, files["new.txt"].removed, files["new.txt"].state) == (3, 0, "created")
        diff = agent.session_diff()
        assert "+# Renamed" in diff and "-# Sample" in diff and "+++ b/new.txt" in diff

        second = agent.rewind_points()[1]
        plan = agent.file_plan(second.index)
        assert sorted(r.copy.shown for r in plan) == ["README.md", "new.txt"]
        readme = next(r for r in plan if r.copy.shown == "README.md")
        assert "-# Renamed" in readme.diff and "+# Sample" in readme.diff     # now -> restored
        agent.rewind(second.index)
        lines = agent.restore_files(plan)
        assert lines == ["new.txt: removed (the agent created it)", "README.md: restored"]
        assert not (ws / "new.txt").exists()
        assert (ws / "README.md").read_text() == original.replace("A small project", "A tiny project\nwith two lines")
        # back to the first prompt: the first edit goes too, and nothing differs from the start
        first = agent.rewind_points()[0]
        agent.restore_files(agent.file_plan(first.index))
        assert (ws / "README.md").read_text() == original
        assert agent.changed_files().files() == [] and agent.session_diff() == ""
        await agent.aclose()


async def test_the_history_survives_a_resume_and_its_files_are_private(tmp_path):
    ws = make_workspace(tmp_path)
    script = [_write("README.md", "replaced\n"), reply("done")]
    with FakeAnthropic(script) as fake:
        agent = fake_agent(ws, fake.base_url, allow=ALLOW)
        await collect(agent.run("replace it"))
        sid, folder = agent.session_id, agent.tool_ctx.history.folder
        await agent.aclose()
        for f in folder.iterdir():
            assert stat.S_IMODE(f.stat().st_mode) == 0o600, f
        resumed = fake_agent(ws, fake.base_url, resume=sid)
        (row,) = resumed.changed_files().files()
        assert row.shown == "README.md" and row.removed == 3 and row.added == 1
        point = resumed.rewind_points()[0]
        assert [r.copy.shown for r in resumed.file_plan(point.index)] == ["README.md"]
        await resumed.aclose()


def test_restore_refuses_a_symlink_planted_since_and_goes_on_with_the_rest(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("secret\n")
    (ws / "a.txt").write_text("a0\n")
    (ws / "b.txt").write_text("b0\n")
    history = FileHistory(tmp_path / "hist")
    ctx = ToolContext(ws, history=history)
    history.checkpoint("p1")
    for name in ("a.txt", "b.txt"):
        history.before_change(ws / name, name)
        (ws / name).write_text(name + " changed\n")
    os.unlink(ws / "a.txt")
    os.symlink(outside, ws / "a.txt")                 # e.g. by a bash command since
    plan = restore_plan(history, "p1")
    lines = apply_restore(plan, ctx, history)
    assert lines[0].startswith("a.txt: not restored") and lines[1] == "b.txt: restored"
    assert outside.read_text() == "secret\n" and (ws / "b.txt").read_text() == "b0\n"


def test_a_copy_is_kept_once_per_prompt_and_a_cut_index_line_is_skipped(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    f = ws / "x.txt"
    f.write_text("v0\n")
    history = FileHistory(tmp_path / "hist")
    history.checkpoint("p1")
    for v in ("v1", "v2"):
        history.before_change(f, "x.txt")
        f.write_text(v + "\n")
    history.checkpoint("p2")
    history.before_change(f, "x.txt")
    f.write_text("v3\n")
    assert len(history.copies) == 2
    with open(tmp_path / "hist" / "index.jsonl", "a") as out:
        out.write('{"seq": 3, "chec')                        # a crash mid-line
    again = FileHistory(tmp_path / "hist")
    assert [c.checkpoint for c in again.copies] == [1, 2]
    assert again.content(again.since("p2")[str(f)]) == b"v2\n"
    assert again.content(again.originals()[str(f)]) == b"v0\n"
    assert restore_plan(again, "unknown prompt") is None


def test_binary_and_too_large_files_are_listed_not_counted(tmp_path, monkeypatch):
    ws = tmp_path / "ws"
    ws.mkdir()
    history = FileHistory(tmp_path / "hist")
    history.checkpoint("p1")
    (ws / "bin.dat").write_bytes(b"\0\1\2")
    history.before_change(ws / "bin.dat", "bin.dat")
    (ws / "bin.dat").write_bytes(b"\0\1\3")
    monkeypatch.setattr("agent_core.tools.file_history.MAX_BYTES", 10)
    (ws / "big.txt").write_text("x" * 100)
    history.before_change(ws / "big.txt", "big.txt")
    (ws / "big.txt").write_text("y" * 100)
    files = {c.shown: c.label for c in ChangedFiles(history).files()}
    assert files == {"bin.dat": "binary", "big.txt": "too large"}
    assert "Binary file bin.dat differs" in session_diff(history)
    plan = {r.copy.shown: r for r in restore_plan(history, "p1")}
    assert plan["big.txt"].problem and plan["bin.dat"].problem is None


def test_counts_are_cached_until_the_file_changes(tmp_path, monkeypatch):
    ws = tmp_path / "ws"
    ws.mkdir()
    history = FileHistory(tmp_path / "hist")
    history.checkpoint("p1")
    (ws / "a.txt").write_text("1\n")
    history.before_change(ws / "a.txt", "a.txt")
    (ws / "a.txt").write_text("1\n2\n")
    changed = ChangedFiles(history)
    assert changed.totals() == (1, 1, 0)
    measured = []
    real = changed._measure
    monkeypatch.setattr(changed, "_measure", lambda p, c: measured.append(p) or real(p, c))
    changed.totals()
    assert measured == []                              # unchanged on disk: not read again
    (ws / "a.txt").write_text("1\n2\n3\n")
    assert changed.totals() == (1, 2, 0) and len(measured) == 1


async def test_a_copy_that_cannot_be_written_is_said_once_and_listed_as_not_restorable(tmp_path, monkeypatch):
    ws = make_workspace(tmp_path)

    def full_disk(self, src, dest):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(FileHistory, "_write_copy", full_disk)
    script = [_edit("README.md", "# Sample", "# One"), _edit("README.md", "# One", "# Two"), reply("done")]
    with FakeAnthropic(script) as fake:
        agent = fake_agent(ws, fake.base_url, allow=ALLOW)
        events = await collect(agent.run("edit it twice"))
        said = [e.message for e in events if getattr(e, "type", "") == "notice" and "File history" in e.message]
        assert said == ["File history: could not keep a copy of README.md: No space left on device; "
                        "/rewind cannot restore that change."]
        (row,) = agent.changed_files().files()
        assert (row.shown, row.state, row.label) == ("README.md", "no copy", "no copy")
        (r,) = agent.file_plan(agent.rewind_points()[0].index)
        assert r.problem == "no copy of it could be kept (a notice said why)"
        assert agent.restore_files([r]) == ["README.md: not restored, no copy of it could be kept (a notice said why)"]
        assert "# Two" in (ws / "README.md").read_text()
        await agent.aclose()


def test_the_first_copies_index_is_kept_as_copies_are_made(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    history = FileHistory(tmp_path / "hist")
    for p in range(3):
        history.checkpoint(f"p{p}")
        for name in ("a.txt", "b.txt"):
            (ws / name).write_text(f"{name} {p}\n")
            history.before_change(ws / name, name)
    first = history.originals()
    assert [c.seq for c in first.values()] == [1, 2] and len(history.copies) == 6
    assert FileHistory(tmp_path / "hist").originals() == first       # the same after a resume


def _one_change(tmp_path, text: str = "a0\n"):
    """A workspace whose a.txt the session changed once after prompt p1, and the outside file."""
    ws = tmp_path / "ws"
    ws.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("MARKER-outside-the-workspace\n")
    (ws / "a.txt").write_text(text)
    history = FileHistory(tmp_path / "hist")
    history.checkpoint("p1")
    history.before_change(ws / "a.txt", "a.txt")
    (ws / "a.txt").write_text("a1\n")
    return ws, outside, history


def test_the_restore_preview_does_not_read_through_a_symlink_planted_since(tmp_path):
    """The restore refused a changed file replaced by a symlink, but its preview read through it:
    the diff showed the outside file. Now it is named as a symlink, not read and not restored."""
    ws, outside, history = _one_change(tmp_path)
    os.unlink(ws / "a.txt")
    os.symlink(outside, ws / "a.txt")
    (r,) = restore_plan(history, "p1")
    assert "MARKER" not in r.diff and r.problem == "now a symlink, not read"
    assert "MARKER" not in session_diff(history) and "a.txt: now a symlink, not read" in session_diff(history)
    (row,) = ChangedFiles(history).files()
    assert (row.state, row.label) == ("not read", "now a symlink, not read")
    assert apply_restore([r], ToolContext(ws, history=history), history) == ["a.txt: not restored, now a symlink, "
                                                                             "not read"]
    assert outside.read_text() == "MARKER-outside-the-workspace\n"


def test_the_restore_preview_does_not_read_through_a_folder_made_a_symlink(tmp_path):
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "sub" / "a.txt").write_text("a0\n")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "a.txt").write_text("MARKER\n")
    history = FileHistory(tmp_path / "hist")
    history.checkpoint("p1")
    history.before_change(ws / "sub" / "a.txt", "sub/a.txt")
    (ws / "sub" / "a.txt").write_text("a1\n")
    (ws / "sub" / "a.txt").unlink()
    (ws / "sub").rmdir()
    os.symlink(tmp_path / "elsewhere", ws / "sub")
    (r,) = restore_plan(history, "p1")
    assert "MARKER" not in r.diff and r.problem == "now reached through a symlink, not read"
    assert "MARKER" not in session_diff(history)


def _fewest(before: list[str], after: list[str]) -> tuple[int, int]:
    """(added, removed) by the longest common subsequence, the slow obvious way."""
    row = [0] * (len(after) + 1)
    for a in before:
        prev, row = row, [0]
        for j, b in enumerate(after):
            row.append(prev[j] + 1 if a == b else max(prev[j + 1], row[j]))
    return len(after) - row[-1], len(before) - row[-1]


@settings(max_examples=examples(400), deadline=None)
@given(st.lists(st.sampled_from("abcd"), max_size=14), st.lists(st.sampled_from("abcd"), max_size=14))
def test_counts_are_the_fewest_lines_added_and_removed(before, after):
    """Exact on small changes: the same figures as the old difflib count wherever that one was
    exact (it was not always: difflib's matcher is a heuristic)."""
    assert _counts(before, after) == _fewest(before, after)


@pytest.mark.parametrize("size", [30_000, 100_000])
def test_one_edit_of_a_file_of_repeated_lines_is_counted_in_linear_time(tmp_path, size):
    """difflib's matcher took 75 s of a core for one edit of 30,000 repeated lines, after every edit."""
    ws = tmp_path / "ws"
    ws.mkdir()
    f = ws / "big.py"
    f.write_text("    pass\n" * size)
    history = FileHistory(tmp_path / "hist")
    history.checkpoint("p1")
    history.before_change(f, "big.py")
    lines = ["    pass\n"] * size
    lines[size // 2] = "    return 1\n"
    lines.insert(size // 3, "    x = 2\n")
    f.write_text("".join(lines))
    started = time.perf_counter()
    (row,) = ChangedFiles(history).files()
    assert time.perf_counter() - started < 2.0
    assert (row.added, row.removed, row.label) == (2, 1, "+2 −1")


def test_a_large_file_is_listed_not_counted_and_a_large_change_is_counted_as_multisets(tmp_path, monkeypatch):
    monkeypatch.setattr("agent_core.tools.changed_files.COUNT_MAX_BYTES", 1_000)
    monkeypatch.setattr("agent_core.tools.changed_files.COUNT_WORK", 100)
    ws = tmp_path / "ws"
    ws.mkdir()
    history = FileHistory(tmp_path / "hist")
    history.checkpoint("p1")
    (ws / "big.txt").write_text("x\n" * 400)
    (ws / "moved.txt").write_text("".join(f"{i}\n" for i in range(100)))
    for name in ("big.txt", "moved.txt"):
        history.before_change(ws / name, name)
    (ws / "big.txt").write_text("x\n" * 600)
    (ws / "moved.txt").write_text("".join(f"{i}\n" for i in reversed(range(100))) + "new\n")
    rows = {r.shown: r for r in ChangedFiles(history).files()}
    assert (rows["big.txt"].state, rows["big.txt"].label) == ("large", "large file, not counted")
    assert rows["moved.txt"].label == "+1 −0"         # moved lines count nothing past COUNT_WORK
