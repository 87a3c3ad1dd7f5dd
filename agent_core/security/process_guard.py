"""Keep same-user programs out of ctxtui's memory and environment.

On Linux any process of the same user may read `/proc/<pid>/environ` and attach a debugger to
ctxtui — including a command the model runs through the bash tool, which could then read the API
key. `PR_SET_DUMPABLE = 0` makes ctxtui's /proc files root-owned and refuses ptrace from
non-root processes (as ssh-agent and gpg-agent do). Elsewhere it does nothing.
"""
from __future__ import annotations

import ctypes
import os
import sys

PR_SET_DUMPABLE = 4
PR_GET_DUMPABLE = 3


def _libc():
    # dlopen(NULL): the C library this process already has loaded. Not ctypes.util.find_library,
    # whose import (subprocess, shutil...) costs every command tens of milliseconds of start-up.
    return ctypes.CDLL(None, use_errno=True)


def make_non_dumpable() -> bool:
    """True when the process is now non-dumpable (Linux only; never raises)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = _libc()
        return libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0 and libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


PR_CAPBSET_DROP = 24
# What a root child could use to read ctxtui's memory (and the key in it): tracing, raw memory and
# I/O, kernel modules, eBPF and perf. Dropped from the bounding set, so no command ctxtui starts can
# hold them, whatever it executes (setuid binaries included); ctxtui itself needs none of them.
CAP_SYS_MODULE, CAP_SYS_RAWIO, CAP_SYS_PTRACE, CAP_PERFMON, CAP_BPF = 16, 17, 19, 38, 39
TOOL_DENIED_CAPS = (CAP_SYS_PTRACE, CAP_SYS_RAWIO, CAP_SYS_MODULE, CAP_PERFMON, CAP_BPF)


def drop_tool_capabilities() -> bool:
    """Linux, as root: keep the capabilities that read another process's memory from every
    process ctxtui starts. True when all of them are out of the bounding set (also when they
    were never in it, as for an ordinary user); never raises."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = _libc()
    except OSError:
        return False
    ok = True
    for cap in TOOL_DENIED_CAPS:
        try:
            if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:     # not allowed, or a cap this kernel lacks
                ok = _not_in_bounding_set(cap) and ok
        except (OSError, AttributeError):
            ok = False
    return ok


def _not_in_bounding_set(cap: int) -> bool:
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("CapBnd:"):
                    return not int(line.split()[1], 16) >> cap & 1
    except (OSError, ValueError):
        pass
    return False


PR_SET_PDEATHSIG = 1


def end_with_parent(parent: int) -> bool:
    """A worker process ends (SIGTERM) when the process that forked it does, however that one ends
    (a Ctrl-C, a kill -9). `parent`: its pid, read before the fork: if it is already gone, this one
    ends now. Linux only; elsewhere a worker ends at its next write to the closed pipe."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        done = _libc().prctl(PR_SET_PDEATHSIG, 15, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False
    if os.getppid() != parent:
        os._exit(1)
    return done
