"""The agent's tools: sandbox, file tools, bash (timeout, cap, cancel), registry."""
from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_core.tool_spec import TOOL_NAMES
from agent_core.tools import CappedText, SandboxError, ToolContext, ToolRegistry, resolve_path
from tests.hypothesis_budget import examples


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("import os\n\ndef main():\n    return 1\n")
    (root / "src" / "util.py").write_text("def helper():\n    return 2\n")
    (root / "README.md").write_text("# demo\nmain entry\n")
    (tmp_path / "outside.txt").write_text("secret outside\n")
    (tmp_path / "outdir").mkdir()
    (tmp_path / "outdir" / "x.txt").write_text("outside too\n")
    return root


@pytest.fixture
def ctx(ws: Path) -> ToolContext:
    return ToolContext(workspace=ws)


@pytest.fixture
def reg() -> ToolRegistry:
    return ToolRegistry()


def run(reg, name, ctx, **inp):
    return reg.execute(name, inp, ctx)


# --- sandbox -----------------------------------------------------------------------------------

@pytest.mark.parametrize("path", ["../outside.txt", "src/../../outside.txt", "/etc/passwd", "~/x"])
def test_paths_outside_the_workspace_are_refused(ws, path):
    with pytest.raises(SandboxError) as e:
        resolve_path(ws, path)
    assert "outside the workspace" in str(e.value) and str(ws) in str(e.value) and path in str(e.value)


def test_symlink_escapes_are_refused(ws, tmp_path):
    (ws / "link.txt").symlink_to(tmp_path / "outside.txt")
    (ws / "linkdir").symlink_to(tmp_path / "outdir")
    for p in ("link.txt", "linkdir/x.txt", "linkdir/new.txt"):
        with pytest.raises(SandboxError, match="symlink"):
            resolve_path(ws, p)


def test_paths_inside_resolve_including_inside_symlinks_and_new_files(ws):
    (ws / "alias.py").symlink_to(ws / "src" / "app.py")
    assert resolve_path(ws, "alias.py") == ws / "src" / "app.py"
    assert resolve_path(ws, "src/./../README.md") == ws / "README.md"
    assert resolve_path(ws, str(ws / "new" / "f.txt")) == ws / "new" / "f.txt"
    assert resolve_path(ws, ".") == ws


@settings(max_examples=examples(100), deadline=None)
@given(parts=st.lists(st.sampled_from(["..", ".", "src", "app.py", "in", "out", "new", "~"]), min_size=1,
                      max_size=6),
       absolute=st.booleans())
def test_resolved_paths_never_leave_the_workspace(tmp_path_factory, parts, absolute):
    base = tmp_path_factory.getbasetemp() / "prop"
    ws = base / "ws"
    if not ws.exists():
        (ws / "src").mkdir(parents=True)
        (ws / "src" / "app.py").write_text("x")
        (base / "elsewhere").mkdir()
        (ws / "in").symlink_to(ws / "src")
        (ws / "out").symlink_to(base / "elsewhere")
    path = "/".join(parts)
    if absolute:
        path = str(ws) + "/" + path
    try:
        got = resolve_path(ws, path)
    except SandboxError:
        return
    assert os.path.realpath(got) == str(got)
    assert got == ws or str(got).startswith(str(ws) + os.sep)


async def test_tools_refuse_escapes_with_a_clear_error(reg, ctx, ws, tmp_path):
    (ws / "linkdir").symlink_to(tmp_path / "outdir")
    out = await run(reg, "read_file", ctx, path="../outside.txt")
    assert out.is_error and "outside the workspace" in out.content and "secret" not in out.content
    out = await run(reg, "write_file", ctx, path="linkdir/evil.txt", content="x")
    assert out.is_error and "symlink" in out.content
    assert not (tmp_path / "outdir" / "evil.txt").exists()
    out = await run(reg, "edit_file", ctx, path="../outside.txt", old_string="secret", new_string="x")
    assert out.is_error and (tmp_path / "outside.txt").read_text() == "secret outside\n"
    out = await run(reg, "grep", ctx, pattern="outside", path="linkdir")
    assert out.is_error and "symlink" in out.content
    out = await run(reg, "glob", ctx, pattern="../*")
    assert out.is_error and "'..'" in out.content


async def test_walks_skip_symlinks_that_leave_the_workspace(reg, ctx, ws, tmp_path):
    (ws / "link.txt").symlink_to(tmp_path / "outside.txt")
    (ws / "linkdir").symlink_to(tmp_path / "outdir")
    out = await run(reg, "grep", ctx, pattern="outside")
    assert "No matches" in out.content
    out = await run(reg, "glob", ctx, pattern="**/*")
    assert "link" not in out.content and "src/app.py" in out.content


# --- read_file ---------------------------------------------------------------------------------

async def test_read_file_numbers_lines(reg, ctx, ws):
    out = await run(reg, "read_file", ctx, path="src/app.py")
    assert not out.is_error
    assert out.content.splitlines()[0] == "1\timport os"          # the number unpadded, then a tab
    assert out.content.splitlines()[3] == "4\t    return 1"
    assert out.meta["total_lines"] == 4


async def test_read_file_offset_limit_and_continuation_note(reg, ctx, ws):
    (ws / "big.txt").write_text("".join(f"line {i}\n" for i in range(1, 101)))
    out = await run(reg, "read_file", ctx, path="big.txt", offset=10, limit=5)
    rows = out.content.splitlines()
    assert rows[0] == "10\tline 10" and rows[4] == "14\tline 14"
    assert "lines 10-14 of 100" in out.content and "offset=15" in out.content
    out = await run(reg, "read_file", ctx, path="big.txt", offset=500)
    assert "past the end" in out.content and "100 lines" in out.content


async def test_read_file_is_bounded(reg, ws):
    ctx = ToolContext(workspace=ws, read_max_lines=50, read_max_line_chars=100, read_max_chars=10_000)
    (ws / "long.txt").write_text("x" * 5000 + "\n" + "".join(f"{i}\n" for i in range(1000)))
    out = await reg.execute("read_file", {"path": "long.txt"}, ctx)
    rows = out.content.splitlines()
    assert len(rows[0]) < 200 and "line cut" in rows[0]
    assert "lines 1-50 of 1001" in out.content
    (ws / "wide.txt").write_text(("y" * 90 + "\n") * 1000)
    ctx = ToolContext(workspace=ws, read_max_chars=10_000)
    out = await reg.execute("read_file", {"path": "wide.txt"}, ctx)
    assert len(out.content) < 10_500 and "output size limit" in out.content
    assert "of 1000" in out.content


async def test_read_file_refuses_binary_folders_and_missing(reg, ctx, ws):
    (ws / "blob.bin").write_bytes(b"\x89PNG\x00\x01\x02" * 100)
    out = await run(reg, "read_file", ctx, path="blob.bin")
    assert out.is_error and "binary" in out.content
    out = await run(reg, "read_file", ctx, path="src")
    assert out.is_error and "folder" in out.content and "glob" in out.content
    out = await run(reg, "read_file", ctx, path="nope.py")
    assert out.is_error and "not found" in out.content


async def test_read_file_empty(reg, ctx, ws):
    (ws / "empty.txt").write_text("")
    out = await run(reg, "read_file", ctx, path="empty.txt")
    assert not out.is_error and "empty" in out.content


# --- write_file / edit_file --------------------------------------------------------------------

async def test_write_file_creates_parents_and_overwrites(reg, ctx, ws):
    out = await run(reg, "write_file", ctx, path="a/b/c.txt", content="one\ntwo\n")
    assert not out.is_error and "Created" in out.content and "2 lines" in out.content
    assert (ws / "a" / "b" / "c.txt").read_text() == "one\ntwo\n"
    out = await run(reg, "write_file", ctx, path="a/b/c.txt", content="new")
    assert "Overwrote" in out.content and (ws / "a/b/c.txt").read_text() == "new"
    out = await run(reg, "write_file", ctx, path="a", content="x")
    assert out.is_error and "folder" in out.content


async def test_edit_file_replaces_a_unique_match_and_shows_a_diff(reg, ctx, ws):
    out = await run(reg, "edit_file", ctx, path="src/app.py", old_string="    return 1", new_string="    return 42")
    assert not out.is_error, out.content
    assert (ws / "src/app.py").read_text() == "import os\n\ndef main():\n    return 42\n"
    assert "-    return 1" in out.content and "+    return 42" in out.content and "@@ -2," in out.content
    assert out.meta["line"] == 4


async def test_edit_file_no_match_says_so_and_suggests_read_file(reg, ctx, ws):
    before = (ws / "src/app.py").read_text()
    out = await run(reg, "edit_file", ctx, path="src/app.py", old_string="return 7", new_string="x")
    assert out.is_error and "not found" in out.content and "read_file" in out.content
    out = await run(reg, "edit_file", ctx, path="src/app.py", old_string="4\t    return 9", new_string="x")
    assert "line-number" in out.content
    assert (ws / "src/app.py").read_text() == before


async def test_edit_file_many_matches_gives_the_count(reg, ctx, ws):
    (ws / "dup.py").write_text("x = 1\ny = 2\nx = 1\nx = 1\n")
    out = await run(reg, "edit_file", ctx, path="dup.py", old_string="x = 1", new_string="x = 3")
    assert out.is_error and "3 places" in out.content and "more surrounding" in out.content
    assert (ws / "dup.py").read_text() == "x = 1\ny = 2\nx = 1\nx = 1\n"


async def test_edit_file_keeps_crlf_and_rejects_noops(reg, ctx, ws):
    (ws / "win.txt").write_bytes(b"a\r\nb\r\nc\r\n")
    out = await run(reg, "edit_file", ctx, path="win.txt", old_string="a\nb", new_string="a\nB")
    assert not out.is_error, out.content
    assert (ws / "win.txt").read_bytes() == b"a\r\nB\r\nc\r\n"
    out = await run(reg, "edit_file", ctx, path="win.txt", old_string="c", new_string="c")
    assert out.is_error and "identical" in out.content
    out = await run(reg, "edit_file", ctx, path="win.txt", old_string="", new_string="c")
    assert out.is_error and "write_file" in out.content


# --- glob / grep -------------------------------------------------------------------------------

async def test_glob_sorted_relative_and_skips_git_and_venv(reg, ctx, ws):
    for d in (".git", ".venv/lib"):
        (ws / d).mkdir(parents=True)
        (ws / d / "hidden.py").write_text("x")
    (ws / "src" / "sub").mkdir()
    (ws / "src" / "sub" / "deep.py").write_text("pass\n")
    out = await run(reg, "glob", ctx, pattern="**/*.py")
    assert out.content.splitlines() == ["src/app.py", "src/sub/deep.py", "src/util.py"]
    out = await run(reg, "glob", ctx, pattern="src/*")
    assert out.content.splitlines() == ["src/app.py", "src/sub/", "src/util.py"]
    out = await run(reg, "glob", ctx, pattern="**/*.{md,py}")
    assert "README.md" in out.content and "src/app.py" in out.content
    out = await run(reg, "glob", ctx, pattern="*.py")
    assert "No paths match" in out.content and "**/*.py" in out.content


async def test_glob_is_capped(reg, ws):
    ctx = ToolContext(workspace=ws, list_cap=10)
    (ws / "many").mkdir()
    for i in range(30):
        (ws / "many" / f"f{i:02d}.txt").write_text("")
    out = await reg.execute("glob", {"pattern": "many/*.txt"}, ctx)
    lines = out.content.splitlines()
    assert lines[:10] == [f"many/f{i:02d}.txt" for i in range(10)]
    assert "10 of 30" in lines[-1] and out.meta["matches"] == 30


async def test_grep_lists_file_line_text_with_filters(reg, ctx, ws):
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("def hidden\n")
    (ws / "blob.bin").write_bytes(b"def \x00 binary")
    os.mkfifo(ws / "pipe")                     # must be skipped, not block the search
    out = await run(reg, "grep", ctx, pattern=r"^def \w+")
    assert out.content.splitlines() == ["src/app.py:3:def main():", "src/util.py:1:def helper():"]
    out = await run(reg, "grep", ctx, pattern="main", glob="*.md")
    assert out.content.splitlines() == ["README.md:2:main entry"]
    out = await run(reg, "grep", ctx, pattern="return", path="src/util.py")
    assert out.content.splitlines() == ["src/util.py:2:    return 2"]
    out = await run(reg, "grep", ctx, pattern="(?i)MAIN", glob="src/**/*.py")
    assert out.content.splitlines() == ["src/app.py:3:def main():"]
    out = await run(reg, "grep", ctx, pattern="zzz")
    assert not out.is_error and "No matches" in out.content


async def test_grep_bad_regex_and_cap(reg, ws):
    ctx = ToolContext(workspace=ws, list_cap=5)
    (ws / "rep.txt").write_text("hit\n" * 50)
    out = await reg.execute("grep", {"pattern": "hit"}, ctx)
    assert len([ln for ln in out.content.splitlines() if ln.startswith("rep.txt:")]) == 5
    assert "stopped after 5" in out.content
    out = await reg.execute("grep", {"pattern": "foo("}, ctx)
    assert out.is_error and "invalid regular expression" in out.content


# --- compact -----------------------------------------------------------------------------------

async def test_compact_requests_compaction_through_meta(reg, ctx):
    out = await run(reg, "compact", ctx, focus="the parser bug")
    assert out.meta == {"compact_requested": True, "focus": "the parser bug"}
    assert "after this tool batch" in out.content and not out.is_error
    out = await run(reg, "compact", ctx)
    assert out.meta == {"compact_requested": True, "focus": None}


# --- bash --------------------------------------------------------------------------------------

def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[-1][0] != "Z"
    except OSError:                    # gone (ENOENT, or ESRCH while reading)
        return False


async def _wait_dead(pid: int) -> bool:
    for _ in range(100):
        if not _alive(pid):
            return True
        await asyncio.sleep(0.02)
    return False


async def test_bash_runs_in_the_workspace_and_reports_exit_code(reg, ctx, ws):
    out = await run(reg, "bash", ctx, command="pwd; echo err >&2; exit 3")
    assert out.content.splitlines() == [str(ws), "err", "exit code 3"]
    assert out.is_error and out.meta["exit_code"] == 3
    out = await run(reg, "bash", ctx, command="true")
    assert out.content == "(no output)\nexit code 0" and not out.is_error


async def test_bash_never_sees_ctxtui_secrets(reg, ctx, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-secret")
    out = await run(reg, "bash", ctx, command='echo "${ANTHROPIC_API_KEY:-unset}"')
    assert out.content.startswith("unset") and "sk-ant" not in out.content


async def test_bash_timeout_kills_the_process_group(reg, ctx, ws):
    out = await run(reg, "bash", ctx, command="sleep 30 & echo $! > bg.pid; echo started; sleep 5",
                    timeout=0.5)
    assert out.is_error and out.meta["timed_out"]
    assert "timed out after 0.5 s" in out.content and "started" in out.content
    assert await _wait_dead(int((ws / "bg.pid").read_text()))


async def test_bash_timeout_is_bounded_and_validated(reg, ws):
    ctx = ToolContext(workspace=ws, bash_max_timeout=2)
    out = await reg.execute("bash", {"command": "echo hi", "timeout": 99}, ctx)
    assert "lowered to the maximum" in out.content and "hi" in out.content
    out = await reg.execute("bash", {"command": "echo hi", "timeout": 0}, ctx)
    assert out.is_error and "positive" in out.content


async def test_bash_cancel_kills_the_process_group(reg, ctx, ws):
    task = asyncio.create_task(run(reg, "bash", ctx, command="sleep 30 & echo $! > bg.pid; wait"))
    for _ in range(250):
        if (ws / "bg.pid").exists() and (ws / "bg.pid").read_text().strip():
            break
        await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await _wait_dead(int((ws / "bg.pid").read_text()))


async def test_bash_output_cap_keeps_head_and_tail(reg, ws):
    ctx = ToolContext(workspace=ws, output_cap=1000)
    out = await reg.execute("bash", {"command": "seq 1 100000"}, ctx)
    assert out.content.startswith("1\n2\n3\n")
    assert out.content.endswith("99999\n100000\nexit code 0")
    assert "chars omitted" in out.content and len(out.content) < 1200
    total = sum(len(f"{i}\n") for i in range(1, 100001))
    assert out.meta["total_chars"] == total
    assert f"[… {total - 1000} chars omitted …]" in out.content


async def test_bash_10mb_output_comes_back_capped(reg, ctx):
    out = await run(reg, "bash", ctx, command="head -c 10000000 /dev/zero | tr '\\0' a")
    assert not out.is_error
    assert out.meta["total_chars"] == 10_000_000
    assert len(out.content) <= ctx.output_cap + 200
    assert out.content.startswith("aaaa") and "9970000 chars omitted" in out.content


async def test_bash_background_job_does_not_hang_the_call(reg, ctx):
    out = await run(reg, "bash", ctx, command="sleep 2 & echo started")
    assert "started" in out.content and "exit code 0" in out.content
    assert "background process" in out.content


def test_capped_text_handles_multibyte_split_across_chunks():
    c = CappedText(100)
    data = "é€".encode() * 10
    for i in range(len(data)):
        c.feed(data[i:i + 1])
    text, omitted = c.finish()
    assert text == "é€" * 10 and omitted == 0


# --- registry ----------------------------------------------------------------------------------

def test_definitions_cover_every_tool_with_a_schema(reg):
    defs = reg.definitions()
    assert [d["name"] for d in defs] == list(TOOL_NAMES)
    for d in defs:
        assert set(d) == {"name", "description", "input_schema"}
        assert d["input_schema"]["type"] == "object" and len(d["description"]) > 40


async def test_registry_turns_every_failure_into_an_error_result(reg, ctx, monkeypatch):
    out = await reg.execute("nope", {}, ctx)
    assert out.is_error and "Unknown tool 'nope'" in out.content and "read_file" in out.content
    out = await reg.execute("read_file", {}, ctx)
    assert out.is_error and "missing required field 'path'" in out.content
    out = await reg.execute("read_file", {"path": 3}, ctx)
    assert out.is_error and "must be string" in out.content
    out = await reg.execute("read_file", {"path": "a", "offset": True}, ctx)
    assert out.is_error and "must be integer" in out.content
    out = await reg.execute("read_file", {"path": "a", "offset": 0}, ctx)
    assert out.is_error and "at least 1" in out.content
    out = await reg.execute("glob", {"pattern": "*", "bogus": 1}, ctx)
    assert out.is_error and "unknown field 'bogus'" in out.content
    out = await reg.execute("glob", ["*"], ctx)
    assert out.is_error and "JSON object" in out.content

    async def boom(self, input, ctx):
        raise RuntimeError("kaput")
    monkeypatch.setattr(type(reg.get("glob")), "run", boom)
    out = await reg.execute("glob", {"pattern": "*"}, ctx)
    assert out.is_error and "kaput" in out.content and "RuntimeError" in out.content
