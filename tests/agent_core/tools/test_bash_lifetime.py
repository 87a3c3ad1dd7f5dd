"""Issue 21: what a bash call starts ends with it (SIGHUP to its group when the command ends, as a
closing terminal does; nohup and setsid keep a process on purpose), what still runs at exit is
killed, and the spill files that keep capped output are capped too."""
from __future__ import annotations

import asyncio
import os
import signal
import time

import pytest

from agent_core.tools import ToolContext, ToolRegistry
from agent_core.tools import bash as bash_module


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:                                       # a zombie is gone for every purpose but the table
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


async def _gone_soon(pid: int, seconds: float = 5.0) -> bool:
    """Polls without blocking the loop: the hang-up is scheduled on it."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        await asyncio.sleep(0.05)
    return False


def _pid_in(out) -> int:
    return int(next(line for line in out.content.splitlines() if line.startswith("PID ")).split()[1])


async def test_a_background_job_ends_with_its_call(tmp_path):
    out = await ToolRegistry().execute("bash", {"command": "sleep 300 > /dev/null 2>&1 & echo PID $!"},
                                       ToolContext(tmp_path))
    pid = _pid_in(out)
    assert await _gone_soon(pid), "the background sleep outlived its bash call"


async def test_a_job_holding_the_output_is_hung_up_and_the_model_told(tmp_path):
    out = await ToolRegistry().execute("bash", {"command": "sleep 300 & echo PID $!"}, ToolContext(tmp_path))
    assert await _gone_soon(_pid_in(out))
    assert "hung up" in out.content and "nohup" in out.content


async def test_nohup_keeps_a_process_on_purpose(tmp_path):
    out = await ToolRegistry().execute("bash", {"command": "nohup sleep 300 > /dev/null 2>&1 & echo PID $!"},
                                       ToolContext(tmp_path))
    pid = _pid_in(out)
    try:
        await asyncio.sleep(bash_module.HANG_UP_DELAY_S + 0.5)
        assert _alive(pid), "nohup is the user's choice: the process should live on"
    finally:
        os.kill(pid, signal.SIGKILL)


async def test_groups_still_running_at_exit_are_killed(tmp_path):
    task = asyncio.ensure_future(ToolRegistry().execute("bash", {"command": "sleep 300"}, ToolContext(tmp_path)))
    for _ in range(100):
        if bash_module._running_groups:
            break
        await asyncio.sleep(0.02)
    (pgid,) = tuple(bash_module._running_groups)
    bash_module._end_running_groups()           # what atexit runs
    assert await _gone_soon(pgid)
    out = await asyncio.wait_for(task, 10)
    assert "exit code -9" in out.content or out.is_error


async def test_the_spill_file_is_capped(tmp_path, monkeypatch):
    monkeypatch.setattr(bash_module, "MAX_SPILL_BYTES", 1 << 20)
    spill = tmp_path / "spill"
    out = await ToolRegistry().execute("bash", {"command": "head -c 3000000 /dev/zero | tr '\\0' a"},
                                       ToolContext(tmp_path, spill_dir=spill))
    saved = out.meta["full_output"]
    assert saved and os.path.getsize(saved) == 1 << 20
    assert f"{3_000_000 - (1 << 20):,} more bytes" in out.content


async def test_the_spill_folder_drops_its_oldest_files(tmp_path, monkeypatch):
    monkeypatch.setattr(bash_module, "MAX_SPILL_FOLDER_BYTES", 2_500_000)
    spill = tmp_path / "spill"
    ctx = ToolContext(tmp_path, spill_dir=spill, output_cap=1000)
    kept = []
    for _ in range(4):
        out = await ToolRegistry().execute("bash", {"command": "head -c 1000000 /dev/zero | tr '\\0' b"}, ctx)
        kept.append(out.meta["full_output"])
        time.sleep(0.01)
    files = sorted(spill.glob("bash-*.txt"))
    assert sum(f.stat().st_size for f in files) <= 2_500_000
    assert os.path.exists(kept[-1]) and not os.path.exists(kept[0])


@pytest.mark.skipif(not hasattr(os, "killpg"), reason="process groups are POSIX")
async def test_a_tool_process_has_its_own_session(tmp_path):
    out = await ToolRegistry().execute("bash", {"command": "ps -o sid= -p $$; echo OUR $PPID"}, ToolContext(tmp_path))
    sid = int(out.content.split()[0])
    assert sid != os.getsid(0)
