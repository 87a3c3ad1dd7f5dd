"""Opening a log to read it: only a regular file, and never in a way that can block.

A log path comes from a folder anyone may have written to (a cloned repository, a shared
projects folder), so it can be a FIFO (`open` would wait for a writer for ever), a symlink to
/dev/zero (an endless line) or a device whose `open` has side effects. The path is stat'ed first
and only a regular file is opened, without blocking; the open file is checked again, so a path
swapped between the two looks is refused too.
"""
from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

MAX_LINE_BYTES = 64 << 20    # a longer line is skipped as corrupt (no real record comes near this)

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


class NotRegularFile(OSError):
    """A log path that is a FIFO, a device, a socket or a folder: refused, never read."""


def describe(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _refuse(path: str | Path, mode: int) -> NotRegularFile:
    return NotRegularFile(errno.EINVAL, f"not a regular file ({describe(mode)}); skipped", str(path))


def check_regular(path: str | Path) -> os.stat_result:
    """The file's stat (symlinks followed); raises NotRegularFile (or the stat's OSError)."""
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise _refuse(path, st.st_mode)
    return st


def is_regular(path: str | Path) -> bool:
    try:
        check_regular(path)
    except OSError:
        return False
    return True


def open_regular(path: str | Path) -> BinaryIO:
    """`open(path, "rb")` for a regular file only. Raises NotRegularFile or OSError."""
    before = check_regular(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _refuse(path, st.st_mode)
        if (st.st_dev, st.st_ino) != (before.st_dev, before.st_ino):
            raise NotRegularFile(errno.EAGAIN, "replaced while being opened; skipped", str(path))
        if flags & getattr(os, "O_NONBLOCK", 0):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
