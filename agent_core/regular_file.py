"""Opening a file only when it is a regular file, and never in a way that can block.

Paths come from places anyone may have written to (a cloned repository, a shared projects
folder, the model's tool calls), so one can be a FIFO (`open` waits for a writer for ever), a
symlink to /dev/zero (endless data) or a device whose `open` has side effects. The path is stat'ed
first and only a regular file is opened, without blocking; the open file is checked again, so a
path swapped between the two looks is refused too. Log readers, the config loader, the trust file
and the file tools all open through here.
"""
from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

TYPE_CHECKING = False    # typing stays unloaded at run time: 3 ms of every status line call
if TYPE_CHECKING:
    from typing import BinaryIO

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symlink"))


class NotRegularFile(OSError):
    """A path that is a FIFO, a device, a socket, a folder (or a symlink, when not followed):
    refused, never read. `kind` says which, e.g. "a FIFO (named pipe)"."""

    def __init__(self, path: str | Path, kind: str, why: str = "") -> None:
        super().__init__(errno.EINVAL, why or f"not a regular file ({kind}); skipped", str(path))
        self.kind = kind


def describe(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "a special file")


def check_regular(path: str | Path, *, follow_symlinks: bool = True) -> os.stat_result:
    """The file's stat; raises NotRegularFile (or the stat's OSError, e.g. FileNotFoundError)."""
    st = os.stat(path, follow_symlinks=follow_symlinks)
    if not stat.S_ISREG(st.st_mode):
        raise NotRegularFile(path, describe(st.st_mode))
    return st


def is_regular(path: str | Path) -> bool:
    try:
        check_regular(path)
    except OSError:
        return False
    return True


def open_regular(path: str | Path, *, follow_symlinks: bool = True) -> BinaryIO:
    """`open(path, "rb")` for a regular file only. Without `follow_symlinks`, a symlink is refused
    (O_NOFOLLOW: an ELOOP OSError for a link swapped in after the check). Raises NotRegularFile or
    OSError."""
    before = check_regular(path, follow_symlinks=follow_symlinks)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | os.O_CLOEXEC
    if not follow_symlinks:
        flags |= os.O_NOFOLLOW
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(path, describe(st.st_mode))
        if (st.st_dev, st.st_ino) != (before.st_dev, before.st_ino):
            raise NotRegularFile(path, "replaced", "replaced while being opened; skipped")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
