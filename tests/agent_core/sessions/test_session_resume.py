"""Sessions that always resume (issue 10, cases 7, 8, 9 and the session-log crashes of case 11):
a run killed mid-tool, invalid text, two writers, a full disk, damaged logs, signals while
printing. Real subprocesses and the real SDK against the loopback fake server."""
from __future__ import annotations

import asyncio
import errno
import fcntl
import io
import json
import os
import signal
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from agent_core.sessions import paths
from app.cli.headless import main as headless_main
from agent_core.logs.discover import latest_session
from agent_core.sessions.session_log import SessionInUse, SessionLog, SessionWriteError
from agent_core.sessions.session_reader import load_session
from agent_core.tools import ToolContext, ToolRegistry
from app.cli.main import build_parser
from compaction import project, validate_history
from compaction.entry import assistant, user
from tests.fake_anthropic import FakeAnthropic, echo_responder, reply, tool_use

from tests.agent_helpers import MODEL, SECRET, collect, fake_agent, make_workspace, wait_for

ROOT = Path(__file__).resolve().parents[3]
SLEEP_CMD = "sleep 300 & echo $! > sleep.pid; wait"
EXIT_FOR = {signal.SIGKILL: -9, signal.SIGTERM: 143, signal.SIGHUP: 129}


# ------------------------------------------------------------------ helpers

def child_env(fake: FakeAnthropic, home: Path) -> dict:
    """The environment of a ctxtui child: the fake server, a fake key, a private state root."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CTXTUI_", "XDG_"))}
    env.update({"ANTHROPIC_API_KEY": SECRET, "ANTHROPIC_BASE_URL": fake.base_url, "CTXTUI_MODEL": MODEL,
                "CTXTUI_HOME": str(home), "XDG_CONFIG_HOME": str(home.parent / "config")})
    return env


def spawn(argv: list[str], env: dict, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "app.cli", "--headless", *argv], cwd=str(ROOT), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


def run_inproc(argv: list[str], env: dict, stdin_text: str | None = None) -> tuple[int, str, str]:
    """`ctxtui --headless ARGV` in this process (environment `env` only)."""
    args = build_parser().parse_args(["--headless", *argv])
    out, err = io.StringIO(), io.StringIO()
    stdin = io.StringIO(stdin_text) if stdin_text is not None else _Tty()
    code = headless_main(args, stdin=stdin, stdout=out, stderr=err, environ=env)
    return code, out.getvalue(), err.getvalue()


class _Tty(io.StringIO):
    def isatty(self):
        return True


def session_logs(home: Path) -> list[Path]:
    """Every session log under `home`, whatever the folder layout."""
    return sorted(p for p in home.rglob("*.jsonl") if paths.is_session_id(p.stem) and p.parent.name == "sessions")


def only_log(home: Path) -> Path:
    (log,) = session_logs(home)
    return log


def alive(pid: int) -> bool:
    """True while `pid` runs (a zombie nobody reaped counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def sleep_pid(ws: Path) -> int | None:
    try:
        text = (ws / "sleep.pid").read_text().strip()
    except FileNotFoundError:
        return None
    return int(text) if text.isdigit() else None


def kill_quietly(pid: int | None) -> None:
    if pid:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def start_sleeping_run(fake: FakeAnthropic, ws: Path, home: Path) -> tuple[subprocess.Popen, int]:
    """A real `ctxtui --headless --allow bash` whose bash tool is inside a long sleep."""
    fake.push(reply("running it", tool_use("bash", {"command": SLEEP_CMD})))
    proc = spawn(["--allow", "bash", "-p", "run the long job", "--workspace", str(ws)], child_env(fake, home))
    if not wait_for(lambda: sleep_pid(ws) is not None or proc.poll() is not None):
        proc.kill()
    if sleep_pid(ws) is None:
        out, err = proc.communicate(timeout=60)
        pytest.fail(f"the tool never started (exit {proc.returncode}): {err.decode(errors='replace')[-2000:]}")
    return proc, sleep_pid(ws)


def last_request_ok(fake: FakeAnthropic) -> list[dict]:
    messages = fake.message_requests[-1]["messages"]
    assert validate_history(messages) == []
    return messages


# ------------------------------------------------------------------ case 7: killed during a tool

@pytest.mark.parametrize("sig", [signal.SIGKILL, pytest.param(signal.SIGTERM, marks=pytest.mark.slow),
                                 pytest.param(signal.SIGHUP, marks=pytest.mark.slow)],
                         ids=["kill", "term", "hup"])
def test_killed_during_a_tool_then_continue(tmp_path, sig):
    ws, home = make_workspace(tmp_path), tmp_path / "state"
    with FakeAnthropic(responder=echo_responder) as fake:
        proc, pid = start_sleeping_run(fake, ws, home)
        try:
            proc.send_signal(sig)
            _, err = proc.communicate(timeout=60)
            assert proc.returncode == EXIT_FOR[sig], err.decode(errors="replace")[-2000:]
            assert b"Traceback" not in err
            if sig != signal.SIGKILL:    # the tool's whole process group ended with the run
                assert wait_for(lambda: not alive(pid)), "the bash tool's sleep outlived the run"
            # (after SIGKILL the sleep lives on: it must not hold the session, so resume now)
            code, out, err = run_inproc(["-p", "go on", "--continue", "--workspace", str(ws),
                                         "--output-format", "json"], child_env(fake, home))
        finally:
            kill_quietly(pid)
        assert code == 0, err
        messages = last_request_ok(fake)
    results = [b for m in messages for b in m["content"] if b.get("type") == "tool_result"]
    assert len(results) == 1 and results[0]["is_error"] is True
    assert "go on" in json.dumps(messages[-1]) and "run the long job" in json.dumps(messages[0])
    loaded = load_session(only_log(home))
    assert validate_history(project(loaded.entries)) == [] and loaded.skipped == 0


def test_a_stranded_log_is_repaired_on_load_and_the_repair_is_logged(tmp_path):
    """An old log where a prompt already followed the unanswered tool call (every --continue used to
    get HTTP 400) loads valid, and a second load finds nothing left to repair."""
    log = SessionLog.create(tmp_path, {"model": MODEL})
    for e in (user("start"), assistant([{"type": "tool_use", "id": "toolu_a", "name": "bash", "input": {}},
                                        {"type": "tool_use", "id": "toolu_b", "name": "glob", "input": {}}]),
              user("go on")):
        log.append_entry(e)
    log.close()
    assert validate_history(project(load_session(log.path, repair=False).entries)) != []

    loaded = load_session(log.path)
    assert validate_history(project(loaded.entries)) == []
    assert any("interrupted" in w.lower() for w in loaded.warnings)
    reopened = SessionLog.open(tmp_path, log.session_id)
    reopened.close()
    again = load_session(log.path)
    assert validate_history(project(again.entries)) == [] and again.warnings == []
    results = [b for e in again.entries for b in e.content if b.get("type") == "tool_result"]
    assert {b["tool_use_id"] for b in results} == {"toolu_a", "toolu_b"}
    assert all(b["is_error"] and "Interrupted" in b["content"] for b in results)


def test_a_cut_off_last_line_is_cut_away_on_open(tmp_path):
    log = SessionLog.create(tmp_path, {})
    log.append_entry(user("kept"))
    log.close()
    whole = log.path.read_bytes()
    log.path.write_bytes(whole + b'{"t":"entry","entry":{"uu')
    reopened = SessionLog.open(tmp_path, log.session_id)
    reopened.append_entry(user("after"))
    reopened.close()
    s = load_session(log.path)
    assert [e.text() for e in s.entries] == ["kept", "after"] and s.skipped == 0 and s.warnings == []


# ------------------------------------------------------------------ case 8: invalid UTF-8 and lone surrogates

@pytest.mark.slow
def test_invalid_utf8_on_stdin(tmp_path):
    ws, home = make_workspace(tmp_path), tmp_path / "state"
    with FakeAnthropic(responder=echo_responder) as fake:
        env = {**child_env(fake, home), "LC_ALL": "C.UTF-8"}
        proc = subprocess.run([sys.executable, "-m", "app.cli", "--headless", "--workspace", str(ws)],
                              cwd=str(ROOT), env=env, input=b"hello \xff\xfe\n", capture_output=True, timeout=60)
        assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-2000:]
        assert "hello \ufffd\ufffd" in json.dumps(fake.message_requests[-1]["messages"], ensure_ascii=False)
        code, _, err = run_inproc(["-p", "and again", "--continue", "--workspace", str(ws)], env)
        assert code == 0, err
        last_request_ok(fake)


async def test_any_text_entering_the_history_is_valid_unicode(tmp_path, fake_anthropic):
    ws = make_workspace(tmp_path)
    (ws / "bad-\udcff-name.txt").write_text("x")  # glob reports a name that is not UTF-8
    fake_anthropic.push(reply(tool_use("glob", {"pattern": "*.txt"})), reply("seen"))
    agent = fake_agent(ws, fake_anthropic.base_url)
    try:
        await collect(agent.run("broken \udcff\udcfe prompt"))
        await collect(agent.run("next"))
    finally:
        await agent.aclose()
    sent = fake_anthropic.message_requests[-1]["messages"]
    text = json.dumps(sent, ensure_ascii=False)
    text.encode("utf-8")
    assert "broken \ufffd\ufffd prompt" in text and "bad-\ufffd-name.txt" in text


def test_a_log_holding_lone_surrogates_is_repaired_on_load(tmp_path):
    log = SessionLog.create(tmp_path, {})
    log.append_entry(user("old \udcff bug"))
    log.close()
    assert "\\udcff" in log.path.read_text()
    s = load_session(log.path)
    assert s.entries[0].text() == "old \ufffd bug"
    json.dumps(project(s.entries), ensure_ascii=False).encode("utf-8")
    assert any("Unicode" in w for w in s.warnings)


# ------------------------------------------------------------------ case 9: one writer per session

def test_a_second_writer_is_refused(tmp_path):
    log = SessionLog.create(tmp_path, {})
    try:
        with pytest.raises(SessionInUse) as info:
            SessionLog.open(tmp_path, log.session_id)
        assert log.session_id in str(info.value) and f"pid {os.getpid()}" in str(info.value)
    finally:
        log.close()
    SessionLog.open(tmp_path, log.session_id).close()     # free again once the first one closed


@pytest.mark.slow
def test_two_continues_of_one_session(tmp_path):
    ws, home = make_workspace(tmp_path), tmp_path / "state"
    with FakeAnthropic(responder=echo_responder) as fake:
        env = child_env(fake, home)
        assert run_inproc(["-p", "first", "--workspace", str(ws)], env)[0] == 0
        sid = load_session(only_log(home)).session_id
        fake.push(reply("running it", tool_use("bash", {"command": SLEEP_CMD})))
        first = spawn(["--allow", "bash", "-p", "long one", "--continue", "--workspace", str(ws)], env)
        pid = None
        try:
            assert wait_for(lambda: sleep_pid(ws) is not None or first.poll() is not None)
            pid = sleep_pid(ws)
            assert pid is not None, first.communicate(timeout=60)[1].decode(errors="replace")
            second = subprocess.run([sys.executable, "-m", "app.cli", "--headless", "-p", "meanwhile",
                                     "--continue", "--workspace", str(ws)], cwd=str(ROOT), env=env,
                                    capture_output=True, text=True, timeout=60)
            assert second.returncode == 2
            assert f"session {sid} is in use by another ctxtui (pid {first.pid})" in second.stderr
            assert "Traceback" not in second.stderr
            first.send_signal(signal.SIGTERM)
            first.communicate(timeout=60)
        finally:
            if first.poll() is None:
                first.kill()
            kill_quietly(pid)
        code, _, err = run_inproc(["-p", "now me", "--continue", "--workspace", str(ws)], env)
        assert code == 0, err
        sent = json.dumps(last_request_ok(fake))
    assert "meanwhile" not in sent and "long one" in sent and "now me" in sent


# ------------------------------------------------------------------ case 11: disk full while logging

def _session_log_fd(fd: int) -> bool:
    try:
        target = Path(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        return False
    return target.parent.name == "sessions" and paths.is_session_id(target.stem)


def test_disk_full_while_logging_leaves_no_half_line_and_the_session_resumes(tmp_path, monkeypatch):
    ws, home = make_workspace(tmp_path), tmp_path / "state"
    real_write = os.write
    full = {"now": False}

    def write(fd, data):
        if _session_log_fd(fd) and (full["now"] or b"MARKER-OUTPUT" in bytes(data)):
            if not full["now"]:
                full["now"] = True
                n = real_write(fd, bytes(data)[:len(data) // 2])   # half of it reached the disk
                if n:
                    return n
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    with FakeAnthropic([reply(tool_use("bash", {"command": "echo MARKER-OUTPUT"})), reply("never sent")],
                       responder=echo_responder) as fake:
        env = child_env(fake, home)
        monkeypatch.setattr(os, "write", write)
        code, _, err = run_inproc(["-p", "start", "--allow", "bash", "--workspace", str(ws)], env)
        monkeypatch.setattr(os, "write", real_write)
        assert full["now"]
        assert code == 1 and "Traceback" not in err
        assert "the disk is full: the session log could not be written; free space, then --continue" in err
        data = only_log(home).read_bytes()
        assert data.endswith(b"\n") and all(json.loads(line) for line in data.splitlines())
        code, _, err = run_inproc(["-p", "resumed", "--continue", "--workspace", str(ws)], env)
        assert code == 0, err
        assert "resumed" in json.dumps(last_request_ok(fake))


def test_a_failed_write_is_cut_back_and_reported(tmp_path, monkeypatch):
    log = SessionLog.create(tmp_path, {})
    log.append_entry(user("before"))
    size = log.path.stat().st_size
    real_write = os.write

    def write(fd, data):
        if fd == log._fd:
            real_write(fd, bytes(data)[:10])
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", write)
    with pytest.raises(SessionWriteError, match="the disk is full"):
        log.append_entry(user("lost " * 100))
    monkeypatch.setattr(os, "write", real_write)
    assert log.path.stat().st_size == size
    log.append_entry(user("after"))
    log.close()
    s = load_session(log.path)
    assert [e.text() for e in s.entries] == ["before", "after"] and s.skipped == 0


# ------------------------------------------------------------------ case 11: damaged state and deep lines

BAD_STATES = ['{"t":"state","pipeline":5}', '{"t":"state","cost":"x"}', '{"t":"state","permissions":[]}',
              '{"t":"state","turns":"a"}', '{"t":"state","permissions":{"always":5}}',
              '{"t":"state","pipeline":{"layers":[1]}}', '{"t":"state","turns":true}']


def _damage(log: Path, lines: list[str]) -> None:
    with open(log, "a", encoding="utf-8") as f:
        for line in lines:
            f.write(line + "\n")


@pytest.mark.parametrize("bad", BAD_STATES)
def test_a_state_line_of_the_wrong_type_is_dropped(tmp_path, bad):
    log = SessionLog.create(tmp_path, {})
    log.append_entry(user("hi"))
    log.append_state({"turns": 3, "permissions": {"always": ["glob"]}, "pipeline": {"layers": {}},
                      "cost": {"models": {}}})
    log.close()
    _damage(log.path, [bad])
    s = load_session(log.path)
    assert s.state["turns"] == 3 and s.state["permissions"] == {"always": ["glob"]}
    assert s.state["pipeline"] == {"layers": {}} and s.state["cost"] == {"models": {}}
    assert any("state" in w for w in s.warnings)


def test_a_line_nested_100000_deep_is_skipped(tmp_path):
    log = SessionLog.create(tmp_path, {})
    log.append_entry(user("hi"))
    log.close()
    _damage(log.path, ["[" * 100_000, '{"t":"entry","entry":' + "[" * 100_000])
    s = load_session(log.path)
    assert [e.text() for e in s.entries] == ["hi"] and s.skipped == 2
    assert latest_session(tmp_path).session_id == log.session_id


def test_continue_through_damage_says_what_was_skipped(tmp_path):
    ws, home = make_workspace(tmp_path), tmp_path / "state"
    with FakeAnthropic(responder=echo_responder) as fake:
        env = child_env(fake, home)
        assert run_inproc(["-p", "first", "--workspace", str(ws)], env)[0] == 0
        _damage(only_log(home), [*BAD_STATES, "[" * 100_000, "not json", "{\"t\":\"entry\"}"])
        code, _, err = run_inproc(["-p", "second", "--continue", "--workspace", str(ws)], env)
        assert code == 0, err
        last_request_ok(fake)
    lines = [line for line in err.splitlines() if line.startswith("ctxtui: session log:")]
    assert any("3 unreadable lines skipped (first: line" in line for line in lines), err
    assert any(f"{len(BAD_STATES)} state" in line for line in lines), err
    assert len(lines) == 2, err


# ------------------------------------------------------------------ case 11: SIGINT while the final event prints

def _pipe_full(fd: int) -> bool:
    buf = bytearray(4)
    fcntl.ioctl(fd, termios.FIONREAD, buf)
    return int.from_bytes(buf, sys.byteorder) >= fcntl.fcntl(fd, 1032)   # F_GETPIPE_SZ


@pytest.mark.slow
def test_sigint_while_the_final_result_prints(tmp_path):
    ws, home = make_workspace(tmp_path), tmp_path / "state"
    big = "word " * 60_000                   # the json result is larger than the pipe: its write blocks
    with FakeAnthropic([reply(big, chunk=20_000)]) as fake:
        proc = spawn(["-p", "say a lot", "--workspace", str(ws), "--output-format", "json"], child_env(fake, home))
        try:
            assert wait_for(lambda: _pipe_full(proc.stdout.fileno()) or proc.poll() is not None)
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert b"Traceback" not in err and proc.returncode == 0, err.decode(errors="replace")[-2000:]
    assert json.loads(out)["text"] == big


# ------------------------------------------------------------------ case 7 in the TUI

TUI_CHILD = """
import os, sys
from pathlib import Path
from app.tui.launch import build_app
app = build_app({"allow": ["bash"]}, environ=dict(os.environ), workspace=Path(sys.argv[1]), claude_root=None)

async def start(pilot):
    app.run_prompt("run the long job")

sys.exit(app.run(headless=True, auto_pilot=start) or 0)
"""


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, pytest.param(signal.SIGHUP, marks=pytest.mark.slow)],
                         ids=["term", "hup"])
def test_tui_stopped_by_a_signal_during_a_tool(tmp_path, sig):
    ws, home = make_workspace(tmp_path), tmp_path / "state"
    with FakeAnthropic(responder=echo_responder) as fake:
        fake.push(reply("running it", tool_use("bash", {"command": SLEEP_CMD})))
        proc = subprocess.Popen([sys.executable, "-c", TUI_CHILD, str(ws)], cwd=str(ROOT), env=child_env(fake, home),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        pid = None
        try:
            assert wait_for(lambda: sleep_pid(ws) is not None or proc.poll() is not None)
            pid = sleep_pid(ws)
            assert pid is not None, proc.communicate(timeout=60)[1].decode(errors="replace")[-2000:]
            proc.send_signal(sig)
            _, err = proc.communicate(timeout=60)
            assert proc.returncode == EXIT_FOR[sig], err.decode(errors="replace")[-2000:]
            assert wait_for(lambda: not alive(pid)), "the bash tool's sleep outlived the app"
        finally:
            if proc.poll() is None:
                proc.kill()
            kill_quietly(pid)
        code, _, err = run_inproc(["-p", "go on", "--continue", "--workspace", str(ws)], child_env(fake, home))
        assert code == 0, err
        messages = last_request_ok(fake)
    results = [b for m in messages for b in m["content"] if b.get("type") == "tool_result"]
    assert len(results) == 1 and results[0]["is_error"] is True


async def test_a_cancel_while_bash_is_starting_still_ends_its_process_group(tmp_path, monkeypatch):
    """A stop signal can land while asyncio is still starting the shell (its children already
    running): asyncio's own clean-up then kills bash alone and the rest of its group runs on."""
    ws = make_workspace(tmp_path)
    loop = asyncio.get_running_loop()
    real_spawn, release = loop.subprocess_exec, asyncio.Event()

    async def slow_spawn(*args, **kw):
        transport, proto = await real_spawn(*args, **kw)
        try:
            await release.wait()          # the shell runs; the tool has not got its transport yet
        except asyncio.CancelledError:
            transport.close()             # what asyncio does to a cancelled start: kill bash alone
            raise
        return transport, proto

    monkeypatch.setattr(loop, "subprocess_exec", slow_spawn)
    task = asyncio.ensure_future(ToolRegistry().execute("bash", {"command": SLEEP_CMD}, ToolContext(ws)))
    pid = None
    try:
        for _ in range(600):              # hang guard: 30 s
            if (pid := sleep_pid(ws)) is not None:
                break
            await asyncio.sleep(0.05)
        assert pid is not None
        task.cancel()
        await asyncio.sleep(0)
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        for _ in range(600):
            if not alive(pid):
                break
            await asyncio.sleep(0.05)
        assert not alive(pid), "the sleep outlived the cancelled bash tool"
    finally:
        release.set()
        kill_quietly(pid)
