"""Issue 21: what a bash call starts ends with it (SIGHUP to its group when the command ends, as a
closing terminal does; nohup and setsid keep a process on purpose), what still runs at exit is
killed, and the spill files that keep capped output are capped too.

No test sleeps to let something happen: each waits for the condition itself (a group registered,
a hang-up sent, a process gone), bounded only so that a failure ends (issue 51: under load, fixed
waits failed)."""
from __future__ import annotations

import asyncio
import os
import shlex
import signal
import sys
import time
from contextlib import suppress
from pathlib import Path

import pytest

from agent_core.tools import ToolContext, ToolRegistry
from agent_core.tools import bash as bash_module
from agent_core.tools import process_groups

# The hang-up comes at the latest HANG_UP_WITHIN_S after a call ends; a process it ends is gone
# (a zombie at worst) as soon as it is scheduled once more: 5 s covers that on a loaded machine.
GONE_WITHIN_S = process_groups.HANG_UP_WITHIN_S + 5.0
ROOT = Path(__file__).resolve().parents[3]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:                                       # a zombie is gone for every purpose but the table
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:                            # reaped since kill(0), unless there is no /proc
        return not os.path.exists("/proc/self/stat")


def _group_members(pgid: int) -> dict[int, bool]:
    """The processes of group `pgid`, each with whether it ignores SIGHUP (SigIgn in /proc)."""
    members = {}
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{name}/stat") as f:
                if int(f.read().rsplit(")", 1)[1].split()[2]) != pgid:
                    continue
            with open(f"/proc/{name}/status") as f:
                ignored = next(int(line.split()[1], 16) for line in f if line.startswith("SigIgn:"))
        except (OSError, StopIteration):
            continue
        members[int(name)] = bool(ignored >> (signal.SIGHUP - 1) & 1)
    return members


@pytest.fixture
def hang_ups(monkeypatch) -> dict[int, dict[int, bool]]:
    """What each hang-up found in its group as it was sent: {pgid: {pid: ignores SIGHUP}}. Whether
    a process outlives a hang-up is settled then, not when a test looks later: a process the
    SIGHUP will end may not have been scheduled to die yet."""
    seen: dict[int, dict[int, bool]] = {}
    send = process_groups.hang_up

    def recording(pgid: int) -> None:
        seen[pgid] = _group_members(pgid)
        send(pgid)

    monkeypatch.setattr(process_groups, "hang_up", recording)
    return seen


def _spared(hang_ups: dict[int, dict[int, bool]], pgid: int, pid: int) -> bool:
    """Whether the hang-up of `pgid` left `pid` alone: the process had left the group (setsid), or
    ignored SIGHUP (nohup), or the group was found empty and not hung up at all."""
    return hang_ups.get(pgid, {}).get(pid, True)


async def _until(condition, seconds: float) -> bool:
    """Whether `condition()` holds within `seconds`; polls without blocking the loop, on which the
    hang-up is scheduled."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


async def _gone_soon(pid: int, seconds: float = GONE_WITHIN_S) -> bool:
    return await _until(lambda: not _alive(pid), seconds)


async def _hung_up(pgid: int) -> bool:
    """Waits until the hang-up of group `pgid` has been sent (or found nothing to send)."""
    return await _until(lambda: pgid not in process_groups.hang_ups_due, GONE_WITHIN_S)


def _number(out, label: str) -> int:
    return int(next(line for line in out.content.splitlines() if line.startswith(label + " ")).split()[1])


def _pid_in(out) -> int:
    return _number(out, "PID")


def _kill(pid: int) -> None:
    with suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


async def test_a_background_job_ends_with_its_call(tmp_path):
    out = await ToolRegistry().execute("bash", {"command": "sleep 300 > /dev/null 2>&1 & echo PID $!"},
                                       ToolContext(tmp_path))
    pid = _pid_in(out)
    assert await _gone_soon(pid), "the background sleep outlived its bash call"


IGNORING_SIGHUP = """
import asyncio, os, signal, sys, time
signal.signal(signal.SIGHUP, signal.SIG_IGN)          # as under `nohup ctxtui --headless ...`
from agent_core.tools import ToolContext, ToolRegistry
from pathlib import Path

async def main():
    out = await ToolRegistry().execute("bash", {"command": "sleep 300 > /dev/null 2>&1 & echo PID $!"},
                                       ToolContext(Path(sys.argv[1])))
    pid = int(out.content.split("PID ")[1].split()[0])
    deadline = time.monotonic() + float(sys.argv[2])
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    break
        except (ProcessLookupError, FileNotFoundError):
            break
        await asyncio.sleep(0.05)
    else:
        os.kill(pid, signal.SIGKILL)
        print("OUTLIVED")
        return
    print("GONE")

asyncio.run(main())
"""


async def test_a_job_is_hung_up_even_when_ctxtui_ignores_sighup(tmp_path):
    """Run under `nohup`, ctxtui ignores SIGHUP, and an ignored signal passes through exec: without
    resetting it for bash, every job a call left behind would outlive the hang-up."""
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", IGNORING_SIGHUP, str(tmp_path), str(GONE_WITHIN_S),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=str(ROOT))
    out, err = await asyncio.wait_for(child.communicate(), GONE_WITHIN_S + 30)
    assert out.decode().strip() == "GONE", err.decode()[-2000:]


async def test_a_job_holding_the_output_is_hung_up_and_the_model_told(tmp_path):
    out = await ToolRegistry().execute("bash", {"command": "sleep 300 & echo PID $!"}, ToolContext(tmp_path))
    assert await _gone_soon(_pid_in(out))
    assert "hung up" in out.content and "nohup" in out.content


@pytest.mark.parametrize("keep", ["nohup", "setsid"])
async def test_nohup_and_setsid_keep_a_process_on_purpose(tmp_path, keep, hang_ups):
    out = await ToolRegistry().execute("bash", {"command": f"{keep} sleep 300 > /dev/null 2>&1 & echo PID $!; "
                                                           "echo GROUP $$"}, ToolContext(tmp_path))
    pid, group = _pid_in(out), _number(out, "GROUP")
    try:
        assert await _hung_up(group)
        assert _spared(hang_ups, group, pid), f"{keep} is the user's choice: the process should live on"
        assert _alive(pid)
    finally:
        _kill(pid)


async def test_the_hang_up_waits_for_a_busy_start(tmp_path, hang_ups):
    """The race behind issue 51's flake: nohup protects its command only once it has run as far as
    signal(SIGHUP, SIG_IGN), and on a loaded machine the way there (fork, exec, start-up) can take
    longer than any fixed delay. Here a process busy for three times the first look's delay before
    it ignores SIGHUP stands for that slow start; the hang-up must wait for it, not kill it."""
    busy_s = 3 * process_groups.HANG_UP_DELAY_S
    assert busy_s < process_groups.HANG_UP_WITHIN_S
    start = ("import signal, time\n"
             f"end = time.monotonic() + {busy_s}\n"
             "while time.monotonic() < end: pass\n"
             "signal.signal(signal.SIGHUP, signal.SIG_IGN)\n"
             "time.sleep(300)\n")
    command = f"{shlex.quote(sys.executable)} -c {shlex.quote(start)} > /dev/null 2>&1 & echo PID $!; echo GROUP $$"
    out = await ToolRegistry().execute("bash", {"command": command}, ToolContext(tmp_path))
    pid, group = _pid_in(out), _number(out, "GROUP")
    try:
        assert await _hung_up(group)
        assert hang_ups[group] == {pid: True}, "hung up before it could ignore the hang-up"
        assert _alive(pid)
    finally:
        _kill(pid)


async def test_a_job_busy_for_good_is_hung_up_all_the_same(tmp_path, monkeypatch):
    monkeypatch.setattr(process_groups, "HANG_UP_WITHIN_S", 1.0)
    out = await ToolRegistry().execute("bash", {"command": "while :; do :; done > /dev/null 2>&1 & echo PID $!"},
                                       ToolContext(tmp_path))
    pid = _pid_in(out)
    try:
        assert await _gone_soon(pid), "a busy background loop outlived its bash call"
    finally:
        _kill(pid)


async def test_groups_still_running_at_exit_are_killed(tmp_path):
    before = set(process_groups.running)
    task = asyncio.ensure_future(ToolRegistry().execute("bash", {"command": "sleep 300"}, ToolContext(tmp_path)))
    # bound only so that a failure ends: starting bash takes milliseconds, a minute is never reached
    assert await _until(lambda: process_groups.running - before, 60.0), "the call never registered its group"
    (pgid,) = tuple(process_groups.running - before)
    process_groups.end_all()                    # what atexit runs
    assert await _gone_soon(pgid)
    out = await asyncio.wait_for(task, 60.0)
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
