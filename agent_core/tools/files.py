"""Helpers the file tools share: binary detection, what kind of file a path is, opening only
regular files (never a FIFO or device, which could block a read for ever), and text decoding with
messages for the model."""
from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

from agent_core.tools.base import ToolContext, ToolError

SNIFF_BYTES = 8192

_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symlink"),
          (stat.S_ISDIR, "a folder"))


def looks_binary(head: bytes) -> bool:
    """A NUL byte in the first block is what git and grep use too."""
    return b"\x00" in head[:SNIFF_BYTES]


def kind_of(mode: int) -> str:
    """'a FIFO (named pipe)', 'a socket', ... for a mode that is not a regular file."""
    return next((name for test, name in _KINDS if test(mode)), "a special file")


def not_regular(shown: str, mode: int) -> str:
    return (f"'{shown}' is {kind_of(mode)}, not a regular file; the file tools only read and write "
            f"regular files, so it was left alone (not opened).")


def is_regular_file(path: Path, shown: str, ctx: ToolContext) -> bool:
    """True for a regular file, False for a folder; a missing path or a special file is refused,
    from its stat alone (nothing is opened)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise ToolError(f"file not found: '{shown}' does not exist in the workspace {ctx.workspace}. "
                        f"Use glob to find the right path.") from None
    if stat.S_ISDIR(mode):
        return False
    if not stat.S_ISREG(mode):
        raise ToolError(not_regular(shown, mode))
    return True


def require_file(path: Path, shown: str, ctx: ToolContext) -> None:
    """Refuse a folder, a missing path or a special file (nothing is opened)."""
    if not is_regular_file(path, shown, ctx):
        raise ToolError(f"'{shown}' is a folder, not a file. Use glob (e.g. pattern '{shown}/*') to list it.")


def open_regular(path: Path | str, shown: str) -> BinaryIO:
    """Open a regular file for reading. O_NONBLOCK so that a path swapped for a FIFO after it was
    checked cannot block the open; O_NOFOLLOW so that a path swapped for a symlink is not followed
    (paths reach here already resolved); fstat of the open file is the final word."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise ToolError(f"'{shown}' is a symlink (it changed after its path was checked); "
                            f"give the path it points to.") from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise ToolError(not_regular(shown, mode))
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_text(path: Path, shown: str) -> str:
    """The whole file as text, newlines untouched (edit_file writes it back byte-exact)."""
    with open_regular(path, shown) as f:
        data = f.read()
    if looks_binary(data):
        raise ToolError(f"'{shown}' is a binary file; only text files can be read or edited.")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ToolError(f"'{shown}' is not UTF-8 text ({e.reason} at byte {e.start}); "
                        "it cannot be edited safely.") from e
