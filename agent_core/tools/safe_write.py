"""Writing a file so that no failure can damage it: the new content goes to a temporary file in the
same folder, is flushed and fsync'ed, and only then renamed over the target (os.replace is atomic).
A full disk, a permission error or a crash at any point leaves either the old file or the new one,
never a mix; the temporary file is removed on every error. Used by write_file and edit_file."""
from __future__ import annotations

import errno
import os
import secrets
import stat
import threading
from pathlib import Path

from agent_core.tools.base import ToolError
from agent_core.regular_file import describe
from agent_core.tools.files import not_regular

# The two calls that meet a full disk; module attributes so a test can make them fail.
_write = os.write
_fsync = os.fsync

CHUNK = 1 << 16
_REASONS = {
    errno.ENOSPC: ("the disk is full", "Free some disk space, then retry."),
    errno.EDQUOT: ("the disk quota is used up", "Free some space in the quota, then retry."),
    errno.EROFS: ("the file system is read-only", "Write somewhere else, or ask the user."),
    errno.EACCES: ("permission was denied", "The file and its folder must be writable (a temporary file "
                                            "is created beside it); ask the user to change the permissions."),
    errno.EPERM: ("the operation is not permitted", "Ask the user to check the file's permissions."),
    errno.EIO: ("an I/O error occurred", "The disk may be failing; tell the user."),
}


def check_target(path: Path, shown: str) -> os.stat_result | None:
    """The target's lstat, or None when it does not exist yet; refuses anything but a regular file
    with a single name, without opening it.

    A file with other hard links is refused rather than written: the other names may live
    anywhere, even outside the workspace (a link made to `../outside.txt`), and we cannot find them.
    Writing through the link would change that outside file; replacing the file (our atomic write)
    would silently split the link. Neither is what the model asked for, so it is told instead."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISDIR(st.st_mode):
        raise ToolError(f"'{shown}' is a folder; give a file path to write.")
    if not stat.S_ISREG(st.st_mode):
        raise ToolError(not_regular(shown, describe(st.st_mode)))
    if st.st_nlink > 1:
        raise ToolError(f"'{shown}' has {st.st_nlink} hard links (other names for the same file, possibly "
                        f"outside the workspace), so it is not written: the change would reach those other "
                        f"names or silently split them. To change only this name, delete it first "
                        f"(e.g. `rm {shown}` with bash), then create it again with write_file.")
    return st


def write_atomic(path: Path, data: bytes, shown: str, stop: threading.Event | None = None) -> bool:
    """Make `data` the content of `path` all at once, keeping an existing file's mode (and owner,
    where allowed); a new file gets 0o666 less the umask, as `open` would give it. Returns whether
    the file existed. Any OSError becomes a ToolError saying what happened and that the file was
    left unchanged; a set `stop` (the call was cancelled or timed out) abandons the write."""
    st = check_target(path, shown)
    try:
        tmp = _write_temp(path, data, st)
        if stop is not None and stop.is_set():
            _unlink(tmp)
            raise ToolError(f"stopped before '{shown}' was replaced; it was left unchanged.")
        try:
            os.replace(tmp, path)
        except BaseException:
            _unlink(tmp)
            raise
    except OSError as e:
        raise ToolError(_failure(e, shown, existed=st is not None)) from e
    _sync_folder(path.parent)
    return st is not None


def _write_temp(path: Path, data: bytes, st: os.stat_result | None) -> str:
    """A fully written, fsync'ed temporary file beside `path`; nothing is left behind on error."""
    fd, tmp = _create_temp(path, private=st is not None)
    try:
        try:
            if st is not None:
                _copy_owner_and_mode(fd, st)
            _write_all(fd, data)
            _fsync(fd)
        finally:
            os.close(fd)
    except BaseException:
        _unlink(tmp)
        raise
    return tmp


def _create_temp(path: Path, private: bool) -> tuple[int, str]:
    """O_EXCL in the target's folder (same file system, so the rename is atomic). Private (0600)
    until the original's mode is copied; a new file's 0o666 is reduced by the umask by the kernel."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(100):
        tmp = str(path.parent / f".{path.name[:200]}.{secrets.token_hex(4)}.tmp")
        try:
            return os.open(tmp, flags, 0o600 if private else 0o666), tmp
        except FileExistsError:
            continue
    raise OSError(errno.EEXIST, "could not pick a free temporary file name", str(path.parent))


def _copy_owner_and_mode(fd: int, st: os.stat_result) -> None:
    """The replacement keeps the original's mode, and its owner when we may set it (chown first:
    it clears set-id bits)."""
    if (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):
        try:
            os.fchown(fd, st.st_uid, st.st_gid)
        except PermissionError:
            pass
    os.fchmod(fd, stat.S_IMODE(st.st_mode))


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = _write(fd, view[:CHUNK])
        view = view[n:]


def _unlink(tmp: str) -> None:
    try:
        os.unlink(tmp)
    except OSError:
        pass


def _sync_folder(folder: Path) -> None:
    """Make the rename itself durable; best effort (some file systems refuse fsync on a folder)."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _failure(e: OSError, shown: str, existed: bool) -> str:
    known = _REASONS.get(e.errno) if e.errno is not None else None
    reason, advice = known or (e.strerror or str(e), "Retry, or tell the user.")
    left = f"'{shown}' was left unchanged" if existed else f"'{shown}' was not created"
    return f"could not write '{shown}': {reason}; {left}. {advice}"
