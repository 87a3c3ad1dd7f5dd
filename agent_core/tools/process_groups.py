"""What a bash call starts ends with it. Each call runs in its own session, whose process group
id is bash's pid. A timeout or a cancellation kills the group; when the command itself ends, what
it left in the group is hung up (SIGHUP, as when a terminal closes), and groups still running when
ctxtui exits are killed.

The hang-up waits for the group to settle. `nohup cmd &` and `setsid cmd &` keep a process on
purpose, but only once nohup has set SIGHUP aside or setsid has left the group: between bash's
fork and that moment the child is busy (running, runnable or paging in, never asleep), and on a
loaded machine that can outlast any fixed delay. So the hang-up comes once no process of the group
is busy, looked at every HANG_UP_POLL_S from HANG_UP_DELAY_S on; a group that stays busy (a CPU
loop left behind) is hung up anyway after HANG_UP_WITHIN_S. Without /proc (not Linux) the first
look hangs it up, as a fixed delay would."""
from __future__ import annotations

import asyncio
import atexit
import functools
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterable

HANG_UP_DELAY_S = 0.5     # after the command ends: the first look at what it left
HANG_UP_POLL_S = 0.1      # then, while a process of the group is busy, a look this often
HANG_UP_WITHIN_S = 10.0   # a group busy this long after its command ended is hung up all the same

running: set[int] = set()    # process groups of bash calls not yet ended
hang_ups_due: set[int] = set()   # groups of ended calls, not yet hung up

_BUSY = frozenset(b"RD")     # /proc state: running or runnable, uninterruptible (paging in an exec)


def started(pgid: int) -> None:
    running.add(pgid)


def kill(pgid: int) -> None:
    """Kill the whole group now (a timeout, a cancel, ctxtui's exit)."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    running.discard(pgid)


def hang_up(pgid: int) -> None:
    """Hang up what the ended command left in its group, as a closing terminal does (SIGHUP, then
    SIGCONT so a stopped job sees it). A process that ignores SIGHUP (`nohup`) or left the group
    (`setsid`) was kept on purpose and lives on."""
    for sig in (signal.SIGHUP, signal.SIGCONT):
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            break
    running.discard(pgid)
    hang_ups_due.discard(pgid)


def ended(pgid: int) -> None:
    """The command has ended: hang up its group once the group has settled (see the module's
    docstring). Without a running loop, at once."""
    running.discard(pgid)
    hang_ups_due.add(pgid)
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        hang_up(pgid)
        return
    loop.call_later(HANG_UP_DELAY_S, _look, loop, pgid, time.monotonic() + HANG_UP_WITHIN_S, frozenset())


def _look(loop: asyncio.AbstractEventLoop, pgid: int, give_up_at: float, busy: frozenset[int]) -> None:
    """Hang up the group if it has settled, else look again. The processes busy at the last look
    are read first, on their own; all of /proc only once they have settled (a look on the event
    loop costs tens of microseconds a process)."""
    if pgid not in hang_ups_due:
        return                                  # hung up already (ctxtui's exit)
    if not _exists(pgid):
        hang_ups_due.discard(pgid)              # nothing left behind: nothing to hang up
        return
    if busy:
        busy = busy_members(pgid, busy)
    if not busy:
        busy = busy_members(pgid)
    if busy and time.monotonic() < give_up_at:
        loop.call_later(HANG_UP_POLL_S, _look, loop, pgid, give_up_at, busy)
        return
    hang_up(pgid)


def _exists(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def busy_members(pgid: int, among: Iterable[int] | None = None) -> frozenset[int]:
    """The processes of group `pgid` (of `among` if given, else of all) that are running, runnable
    or in uninterruptible sleep: not yet blocked in a system call, as a child between bash's fork
    and nohup's signal() is not. Empty where /proc cannot say."""
    if among is None:
        try:
            among = [int(name) for name in os.listdir("/proc") if name.isdigit()]
        except OSError:
            return frozenset()
    group = str(pgid).encode()
    busy = set()
    for pid in among:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue                            # ended meanwhile
        # pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses, so split after the last ')'
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 2 and fields[2] == group and fields[0][0] in _BUSY:
            busy.add(pid)
    return frozenset(busy)


def end_all() -> None:
    """At exit: kill what a bash call still runs (a cancelled turn ends its own group first) and
    hang up what ended calls left behind."""
    for pgid in list(running):
        kill(pgid)
    for pgid in list(hang_ups_due):
        hang_up(pgid)
    running.clear()


atexit.register(end_all)


def bash_argv(command: str) -> list[str]:
    """bash running `command`, with SIGHUP at its default even when ctxtui itself ignores it
    (started under `nohup`, say): an ignored signal is inherited through exec and bash cannot undo
    it, so every process a call left behind would outlive its hang-up. coreutils' `env
    --default-signal` resets it before bash starts; a `nohup` inside the command still holds."""
    argv = ["/bin/bash", "-c", command]
    if signal.getsignal(signal.SIGHUP) == signal.SIG_IGN and (env := _env_resetting_signals()) is not None:
        return [env, "--default-signal=HUP", *argv]
    return argv


@functools.lru_cache(maxsize=1)
def _env_resetting_signals() -> str | None:
    """`env` when it has --default-signal (coreutils 8.31 and later), else None: then the
    inherited ignore stands, as it did before."""
    env = shutil.which("env")
    if env is None:
        return None
    try:
        ok = subprocess.run([env, "--default-signal=HUP", "true"], capture_output=True, timeout=5).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return None
    return env if ok else None
