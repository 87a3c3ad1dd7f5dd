"""Keep same-user programs out of ctxtui's memory and environment.

On Linux any process of the same user may read `/proc/<pid>/environ` and attach a debugger to
ctxtui — including a command the model runs through the bash tool, which could then read the API
key. `PR_SET_DUMPABLE = 0` makes ctxtui's /proc files root-owned and refuses ptrace from
non-root processes (as ssh-agent and gpg-agent do). Elsewhere it does nothing.
"""
from __future__ import annotations

import ctypes
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
