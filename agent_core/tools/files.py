"""Helpers the file tools share: binary detection, what kind of file a path is, opening only
regular files (never a FIFO or device, which could block a read for ever), and text decoding with
messages for the model."""
from __future__ import annotations

import errno
import os
import shlex
import stat
from pathlib import Path
from typing import BinaryIO

from agent_core.regular_file import NotRegularFile, describe
from agent_core.regular_file import open_regular as open_regular_file
from agent_core.tools.base import ToolContext, ToolError

SNIFF_BYTES = 8192

def looks_binary(head: bytes) -> bool:
    """A NUL byte in the first block is what git and grep use too."""
    return b"\x00" in head[:SNIFF_BYTES]


def not_regular(shown: str, kind: str) -> str:
    return (f"'{shown}' is {kind}, not a regular file; the file tools only read and write "
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
        raise ToolError(not_regular(shown, describe(mode)))
    return True


def require_file(path: Path, shown: str, ctx: ToolContext) -> None:
    """Refuse a folder, a missing path or a special file (nothing is opened)."""
    if not is_regular_file(path, shown, ctx):
        raise ToolError(f"'{shown}' is a folder, not a file. Use glob (e.g. pattern '{shown}/*') to list it.")


class HardLinked(ToolError):
    """A regular file with more than one name: refused by every tool that reads or writes."""

    def __init__(self, shown: str, links: int) -> None:
        super().__init__(hard_linked(shown, links))
        self.links = links


def hard_linked(shown: str, links: int) -> str:
    """Why a file with other hard links is not read, and what to do instead (for the model)."""
    copy = f"cp {shlex.quote(shown)} {shlex.quote(shown + '.copy')}"
    return (f"'{shown}' has {links} hard links (other names for the same file). Those names cannot be "
            f"found and may be outside the workspace, so the file tools do not read it: its content may "
            f"belong to a file elsewhere on this machine. If you need it, ask the user to check it, or copy "
            f"it into a file of its own with bash (e.g. `{copy}`) and read the copy.")


def open_regular(path: Path | str, shown: str) -> BinaryIO:
    """Open a regular file for reading (agent_core/regular_file.py), never following a symlink
    (paths reach here already resolved, so one is a link swapped in after the check); refusals
    become messages for the model.

    A file with more than one hard link is refused, judged on the open file itself (so a link
    made after a check cannot slip through): its other names cannot be found and may lie outside
    the workspace, where the path checks cannot see them (`ln ../../secret.txt x` makes an
    outside file look like one of the workspace's). write_file and edit_file refuse it too
    (safe_write.check_target)."""
    try:
        f = open_regular_file(path, follow_symlinks=False)
    except NotRegularFile as e:
        raise ToolError(not_regular(shown, e.kind)) from None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise ToolError(f"'{shown}' is a symlink (it changed after its path was checked); "
                            f"give the path it points to.") from None
        raise
    links = os.fstat(f.fileno()).st_nlink
    if links > 1:
        f.close()
        raise HardLinked(shown, links)
    return f


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
