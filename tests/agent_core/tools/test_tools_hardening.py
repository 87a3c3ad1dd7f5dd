"""Issue 10, tool part: safe writes (case 6), special files and hard links (cases 4, 10), the state
folder kept out of reach, secrets scrubbed from tool output and spill files (case 3), and tools that
neither hang nor outlive a cancel (case 10)."""
from __future__ import annotations

import asyncio
import errno
import json
import os
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from agent_core.tools import ToolContext, ToolRegistry
from compaction import scrub as scrubber

ROOT = Path(__file__).resolve().parents[3]
FAKE_KEY = "sk-ant-api03-FAKEfakeFAKEfake0123456789-test"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("import os\n\ndef main():\n    return 1\n")
    (tmp_path / "outside.txt").write_text("outside, keep me\n")
    return root


@pytest.fixture
def reg() -> ToolRegistry:
    return ToolRegistry()


@pytest.fixture
def secret():
    scrubber.register_secret(FAKE_KEY)
    yield FAKE_KEY
    scrubber.forget_secrets()


def _listing(folder: Path) -> list[str]:
    return sorted(os.listdir(folder))


def _thousand_lines() -> str:
    return "".join(f"line {i:04d}: some source text that is not filler\n" for i in range(1000))


# --- 1. safe writes (case 6) --------------------------------------------------------------------

def _disk_full_at(monkeypatch, which: str) -> None:
    """Make the helper's write (after half of the first chunk went out) or its fsync fail with ENOSPC."""
    from agent_core.tools import safe_write

    if which == "write":
        real, calls = safe_write._write, []

        def write(fd, data):
            if calls:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            calls.append(fd)
            return real(fd, bytes(data[: max(len(data) // 2, 1)]))
        monkeypatch.setattr(safe_write, "_write", write)
    else:
        def fsync(fd):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        monkeypatch.setattr(safe_write, "_fsync", fsync)


@pytest.mark.parametrize("which", ["write", "fsync"])
@pytest.mark.parametrize("tool", ["edit_file", "write_file"])
async def test_disk_full_leaves_the_file_byte_for_byte_and_no_temp_file(reg, ws, monkeypatch, tool, which):
    target = ws / "big.py"
    original = _thousand_lines().encode()
    target.write_bytes(original)
    before = _listing(ws)
    _disk_full_at(monkeypatch, which)
    inp = ({"path": "big.py", "old_string": "line 0500:", "new_string": "LINE 500:"} if tool == "edit_file"
           else {"path": "big.py", "content": "x" * 20_000})
    out = await reg.execute(tool, inp, ToolContext(ws))
    assert out.is_error
    assert "disk is full" in out.content and "'big.py' was left unchanged" in out.content
    assert target.read_bytes() == original
    assert _listing(ws) == before


async def test_disk_full_on_a_new_file_creates_nothing(reg, ws, monkeypatch):
    _disk_full_at(monkeypatch, "write")
    out = await reg.execute("write_file", {"path": "new.txt", "content": _thousand_lines()}, ToolContext(ws))
    assert out.is_error and "disk is full" in out.content and "new.txt" in out.content
    assert "new.txt" not in _listing(ws) and _listing(ws) == ["src"]


async def test_writes_keep_the_mode_and_new_files_follow_the_umask(reg, ws):
    target = ws / "run.sh"
    target.write_text("echo one\n")
    target.chmod(0o750)
    out = await reg.execute("edit_file", {"path": "run.sh", "old_string": "one", "new_string": "two"}, ToolContext(ws))
    assert not out.is_error, out.content
    assert target.read_text() == "echo two\n" and stat.S_IMODE(target.stat().st_mode) == 0o750
    out = await reg.execute("write_file", {"path": "run.sh", "content": "echo three\n"}, ToolContext(ws))
    assert not out.is_error and stat.S_IMODE(target.stat().st_mode) == 0o750
    old = os.umask(0o027)
    try:
        out = await reg.execute("write_file", {"path": "fresh.txt", "content": "hi"}, ToolContext(ws))
    finally:
        os.umask(old)
    assert not out.is_error and stat.S_IMODE((ws / "fresh.txt").stat().st_mode) == 0o640


async def test_a_write_replaces_the_file_rather_than_rewriting_it_in_place(reg, ws):
    target = ws / "src" / "app.py"
    held = target.open("rb")          # a reader holding the old file still sees the old bytes
    try:
        out = await reg.execute("write_file", {"path": "src/app.py", "content": "new\n"}, ToolContext(ws))
        assert not out.is_error
        assert held.read() == b"import os\n\ndef main():\n    return 1\n"
    finally:
        held.close()
    assert target.read_text() == "new\n"


# --- 2. only regular files ----------------------------------------------------------------------

def _release(fifo: Path) -> None:
    """If a broken tool is blocked opening the FIFO for writing, give it a reader so it can finish."""
    try:
        fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return
    os.close(fd)


async def test_write_and_edit_refuse_a_fifo_without_blocking(reg, ws):
    fifo = ws / "pipe"
    os.mkfifo(fifo)
    try:
        out = await asyncio.wait_for(reg.execute("write_file", {"path": "pipe", "content": "x"}, ToolContext(ws)), 30)
    finally:
        _release(fifo)
    assert out.is_error and "FIFO" in out.content and "regular file" in out.content
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    out = await asyncio.wait_for(
        reg.execute("edit_file", {"path": "pipe", "old_string": "a", "new_string": "b"}, ToolContext(ws)), 30)
    assert out.is_error and "regular file" in out.content
    for tool, inp in (("read_file", {"path": "pipe"}), ("grep", {"pattern": "x", "path": "pipe"})):
        out = await asyncio.wait_for(reg.execute(tool, inp, ToolContext(ws)), 30)
        assert out.is_error and "regular file" in out.content, (tool, out.content)


async def test_write_refuses_a_socket(reg, ws, monkeypatch):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    monkeypatch.chdir(ws)             # AF_UNIX paths are short: bind relative to the workspace
    try:
        sock.bind("sock")
        out = await reg.execute("write_file", {"path": "sock", "content": "x"}, ToolContext(ws))
    finally:
        sock.close()
    assert out.is_error and "socket" in out.content and "regular file" in out.content
    assert stat.S_ISSOCK(os.lstat(ws / "sock").st_mode)


def test_open_regular_refuses_a_fifo_and_a_symlink_without_blocking(ws):
    from agent_core.tools import ToolError
    from agent_core.tools.files import open_regular

    os.mkfifo(ws / "pipe")
    (ws / "link").symlink_to(ws / "src" / "app.py")
    result: list[BaseException | None] = []

    def attempt():
        for name in ("pipe", "link"):
            try:
                open_regular(ws / name, name).close()
                result.append(None)
            except BaseException as e:     # noqa: BLE001 — recorded for the assertion below
                result.append(e)
    t = threading.Thread(target=attempt, daemon=True)
    t.start()
    t.join(30)
    _release(ws / "pipe")
    assert not t.is_alive()
    assert [type(e) for e in result] == [ToolError, ToolError]
    assert "FIFO" in str(result[0]) and "symlink" in str(result[1])
    with open_regular(ws / "src" / "app.py", "src/app.py") as f:
        assert f.read().startswith(b"import os")


# --- 3. hard links (case 4) ---------------------------------------------------------------------

@pytest.mark.parametrize("tool", ["write_file", "edit_file"])
async def test_a_hard_link_to_an_outside_file_is_refused(reg, ws, tmp_path, tool):
    os.link(tmp_path / "outside.txt", ws / "x")
    inp = ({"path": "x", "content": "pwned\n"} if tool == "write_file"
           else {"path": "x", "old_string": "keep me", "new_string": "pwned"})
    out = await reg.execute(tool, inp, ToolContext(ws))
    assert out.is_error and "hard link" in out.content
    assert (tmp_path / "outside.txt").read_text() == "outside, keep me\n"
    assert (ws / "x").read_text() == "outside, keep me\n"
    assert os.stat(ws / "x").st_ino == os.stat(tmp_path / "outside.txt").st_ino


# --- 4. ctxtui's own state is out of reach -------------------------------------------------------

@pytest.fixture
def state_ctx(ws: Path) -> ToolContext:
    state = ws / "state"            # not in skip_dirs: only `protected` keeps it out
    (state / "sessions").mkdir(parents=True)
    (state / "sessions" / "s.jsonl").write_text('{"always": []}\n')
    (ws / "peek.jsonl").symlink_to(state / "sessions" / "s.jsonl")
    return ToolContext(ws, protected=(state,))


@pytest.mark.parametrize("tool,inp", [
    ("read_file", {"path": "state/sessions/s.jsonl"}),
    ("read_file", {"path": "peek.jsonl"}),
    ("write_file", {"path": "state/sessions/s.jsonl", "content": '{"always": ["bash"]}\n'}),
    ("write_file", {"path": "state/new.txt", "content": "x"}),
    ("edit_file", {"path": "state/sessions/s.jsonl", "old_string": "[]", "new_string": '["bash"]'}),
    ("edit_file", {"path": "peek.jsonl", "old_string": "[]", "new_string": '["bash"]'}),
    ("grep", {"pattern": "always", "path": "state"}),
    ("glob", {"pattern": "state/**/*.jsonl"}),
])
async def test_tools_cannot_reach_the_state_folder(reg, ws, state_ctx, tool, inp):
    out = await reg.execute(tool, inp, state_ctx)
    assert out.is_error and "ctxtui's own state" in out.content, out.content
    assert (ws / "state" / "sessions" / "s.jsonl").read_text() == '{"always": []}\n'
    assert not (ws / "state" / "new.txt").exists()


async def test_walks_skip_the_state_folder(reg, ws, state_ctx):
    out = await reg.execute("grep", {"pattern": "always"}, state_ctx)
    assert "No matches" in out.content
    out = await reg.execute("glob", {"pattern": "**/*"}, state_ctx)
    assert "src/app.py" in out.content and "state" not in out.content and "peek" not in out.content


async def test_the_bash_spill_file_stays_readable_when_state_is_protected(reg, tmp_path, ws):
    state = tmp_path / "state"
    ctx = ToolContext(ws, protected=(state,), output_cap=200, spill_dir=state / "sessions" / "s1" / "tool-results")
    out = await reg.execute("bash", {"command": "seq 1 2000"}, ctx)
    spilled = out.meta["full_output"]
    assert spilled and spilled in out.content
    out = await reg.execute("read_file", {"path": spilled, "offset": 1500, "limit": 1}, ctx)
    assert not out.is_error and out.content.startswith("1500\t1500")
    out = await reg.execute("grep", {"pattern": "^1999$", "path": spilled}, ctx)
    assert out.content.endswith(":1999:1999")
    out = await reg.execute("write_file", {"path": spilled, "content": "x"}, ctx)
    assert out.is_error



async def test_the_transcript_a_summary_points_to_is_readable_and_nothing_else_of_the_session(reg, tmp_path, ws):
    state = tmp_path / "state"
    session = state / "sessions" / "s1"
    (session / "transcripts").mkdir(parents=True)
    transcript = session / "transcripts" / "auto-1.jsonl"
    transcript.write_text('{"role": "user", "content": "FACT: the code is K7Q2-19"}\n')
    (session / "log.jsonl").write_text("{}\n")
    (session / "transcripts" / "planted").symlink_to(session / "log.jsonl")
    ctx = ToolContext(ws, protected=(state,), transcript_dir=session / "transcripts")
    out = await reg.execute("read_file", {"path": str(transcript)}, ctx)
    assert not out.is_error and "K7Q2-19" in out.content
    for refused in (session / "log.jsonl", session / "transcripts" / "planted",
                    session / "transcripts" / ".." / "log.jsonl"):
        out = await reg.execute("read_file", {"path": str(refused)}, ctx)
        assert out.is_error and "outside the workspace" in out.content and "{}" not in out.content, refused
    out = await reg.execute("write_file", {"path": str(transcript), "content": "x"}, ctx)
    assert out.is_error and "K7Q2-19" in transcript.read_text()

# --- 5. secrets in tool output (case 3) ----------------------------------------------------------

async def test_every_tool_result_is_scrubbed(reg, ws, secret):
    (ws / "notes.txt").write_text(f"key={secret}\n")
    ctx = ToolContext(ws)
    for tool, inp in (("read_file", {"path": "notes.txt"}), ("grep", {"pattern": "key="}),
                      ("bash", {"command": "cat notes.txt"}),
                      ("edit_file", {"path": "notes.txt", "old_string": "key=", "new_string": "KEY="})):
        out = await reg.execute(tool, inp, ctx)
        assert secret not in out.content and scrubber.REDACTED in out.content, (tool, out.content)


async def test_a_key_split_across_output_chunks_is_scrubbed_in_the_spill_file(reg, ws, secret):
    spill = ws.parent / "spill"
    ctx = ToolContext(ws, output_cap=100, spill_dir=spill)
    cmd = (f"seq 1 3000; printf %s '{secret[:12]}'; sleep 0.3; printf '%s\\n' '{secret[12:]}'; "
           f"sleep 0.3; seq 1 3000")
    out = await reg.execute("bash", {"command": cmd}, ctx)
    saved = Path(out.meta["full_output"])
    data = saved.read_text()
    assert secret not in data and secret[:12] + "\n" not in data
    assert f"3000\n{scrubber.REDACTED}\n1\n" in data
    assert secret not in out.content


_ENV_PROBE = r"""
import asyncio, json, os, sys
from pathlib import Path
from agent_core.tools import ToolContext, ToolRegistry
from compaction.scrub import register_secret
register_secret(os.environ["ANTHROPIC_API_KEY"])
ws, spill = Path(sys.argv[1]), Path(sys.argv[2])
ctx = ToolContext(ws, output_cap=300, spill_dir=spill)
cmd = "tr '\\0' '\\n' < /proc/$PPID/environ; env; cat /proc/self/environ; echo; seq 1 500"
out = asyncio.run(ToolRegistry().execute("bash", {"command": cmd}, ctx))
saved = out.meta["full_output"]
print(json.dumps({"content": out.content, "spill": Path(saved).read_text(errors="replace") if saved else ""}))
"""


def test_bash_cannot_hand_the_key_over_through_proc_environ(tmp_path, ws):
    env = {**os.environ, "ANTHROPIC_API_KEY": FAKE_KEY, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", _ENV_PROBE, str(ws), str(tmp_path / "spill")], env=env,
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "ANTHROPIC_API_KEY" in got["spill"]        # the parent's environment was really read
    assert FAKE_KEY not in got["content"] and FAKE_KEY not in got["spill"]
    assert scrubber.REDACTED in got["spill"]


# --- 6. nothing hangs (case 10) ------------------------------------------------------------------

_REDOS_PROBE = r"""
import asyncio, sys
from pathlib import Path
from agent_core.tools import ToolContext, ToolRegistry
ws = Path(sys.argv[1])
out = asyncio.run(ToolRegistry().execute("grep", {"pattern": "(a+)+$"}, ToolContext(ws)))
print(out.content)
"""


def test_grep_with_a_catastrophic_pattern_finishes(ws):
    (ws / "evil.txt").write_text("a" * 40 + "!\n" + "a" * 10 + "\n")
    proc = subprocess.run([sys.executable, "-c", _REDOS_PROBE, str(ws)], capture_output=True, text=True,
                          timeout=60, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "evil.txt:2:" + "a" * 10


@pytest.mark.parametrize("pattern,advice", [
    (r"(\w+) \1", "backreference"),
    (r"foo(?=bar)", "lookaround"),
    (r"(?<!x)y", "lookaround"),
])
async def test_grep_explains_syntax_the_linear_engine_lacks(reg, ws, pattern, advice):
    out = await reg.execute("grep", {"pattern": pattern}, ToolContext(ws))
    assert out.is_error and advice in out.content and "bash" in out.content


def test_grep_description_names_the_engine(reg):
    (grep,) = [d for d in reg.definitions() if d["name"] == "grep"]
    assert "RE2" in grep["description"] and "Python regular expression" not in grep["description"]


def _blocking_search(seen: list[threading.Event]):
    def search(path, rx, stop):
        seen.append(stop)
        stop.wait(60)
        return None
    return search


async def test_a_thread_tool_past_its_deadline_returns_a_timeout_and_is_stopped(reg, ws, monkeypatch):
    from agent_core.tools import grep

    seen: list[threading.Event] = []
    monkeypatch.setattr(grep, "_search_file", _blocking_search(seen))
    out = await asyncio.wait_for(reg.execute("grep", {"pattern": "x"}, ToolContext(ws, tool_timeout=0.3)), 30)
    assert out.is_error and "timed out after 0.3 s" in out.content and out.meta["error"] == "timeout"
    assert seen and seen[0].wait(30)


async def test_cancelling_grep_stops_its_thread(reg, ws, monkeypatch):
    from agent_core.tools import grep

    seen: list[threading.Event] = []
    monkeypatch.setattr(grep, "_search_file", _blocking_search(seen))
    task = asyncio.create_task(reg.execute("grep", {"pattern": "x"}, ToolContext(ws)))
    for _ in range(1500):
        if seen:
            break
        await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert seen and seen[0].wait(30)


def _group(pgid: int) -> list[int]:
    """Live (non-zombie) processes in process group `pgid`."""
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(") ", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            pids.append(int(name))
    return pids


async def test_cancelling_bash_kills_its_whole_process_group(reg, ws):
    task = asyncio.create_task(reg.execute("bash", {"command": "echo $$ > sh.pid; sleep 300 & sleep 300"},
                                           ToolContext(ws)))
    pgid = None
    for _ in range(1500):
        if (ws / "sh.pid").exists() and (ws / "sh.pid").read_text().strip():
            pgid = int((ws / "sh.pid").read_text())
            if len(_group(pgid)) >= 2:
                break
        await asyncio.sleep(0.02)
    assert pgid is not None and len(_group(pgid)) >= 2
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    for _ in range(500):
        if not _group(pgid):
            break
        await asyncio.sleep(0.02)
    assert _group(pgid) == []
