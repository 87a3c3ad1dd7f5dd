"""The session's changes to files, from the file history: lines added and removed per file (the
changed files list of `/cost` and the side pane) and the unified diff (`/diff`, and what `/rewind`
shows before it puts files back).

Counts are taken against the file as it was before the session first changed it, so a file edited
ten times is one row and an edit undone by a later one counts nothing. A file's figures are kept
while it stays the same on disk: the side pane asks after every tool call, and only the file just
written is read again.

What is counted, in time linear in the file's size (difflib's matcher, which this used, took 75 s
of a core for one edit of a 30,000-line file of repeated lines, after every edit): the lines the
two versions share at their start and at their end are set aside, and the rest is counted exactly
(the fewest lines removed and added, Myers' search) while that takes at most COUNT_WORK steps,
which any change of a few hundred lines does. A larger change is counted as multisets: a line is
added as many times as it occurs more often now, removed as many times as it occurs less often
(so a line moved inside that changed region counts nothing; a diff shows it removed and added).
A file over COUNT_MAX_BYTES, before or now, is listed as "large file, not counted".

The workspace may have changed under the session: bash (or anyone) can put a folder, a FIFO or a
symlink to a file outside the workspace where a changed file was. Only a regular file reached
without a symlink is ever opened, and never in a way that blocks (`read_now`); anything else is
listed with what it is now ("now a FIFO, not read"), by the list, /diff and /rewind alike."""
from __future__ import annotations

import difflib
import errno
import os
import threading
from collections import Counter

from agent_core.file_change import BINARY, LARGE, NOT_READ, FileChange
from agent_core.regular_file import NotRegularFile, open_regular
from agent_core.tools.file_history import MAX_BYTES, Copy, FileHistory

DIFF_CONTEXT = 3
DIFF_MAX_LINES = 2_000       # per file in /diff; the rest is counted, not shown
COUNT_MAX_BYTES = 2 * 1024 * 1024   # either version larger: listed, not counted (0.3 s of a core at most)
COUNT_WORK = 1_000_000       # steps of the exact count before a large change is counted as multisets


class NotRead(Exception):
    """A changed file that was not read as it is now; `note` says why, for the user."""

    def __init__(self, note: str) -> None:
        super().__init__(note)
        self.note = note


class LargeNow(NotRead):
    """Over the size `read_now` was given."""


def _now(kind: str) -> str:
    if kind == "replaced":
        return "replaced while being opened, not read"
    return f"now {kind.split(' (')[0]}, not read"          # "a FIFO (named pipe)": "now a FIFO, not read"


def read_now(path: str, limit: int = MAX_BYTES) -> bytes | None:
    """The changed file's bytes now (`path` is the real path it had), None when it is gone.
    Raises NotRead when it is no longer a regular file reached without a symlink (never opened
    then: a FIFO would block, a symlink could show a file outside the workspace) or is unreadable,
    LargeNow when it is over `limit` bytes."""
    if os.path.realpath(path) != path:
        raise NotRead(_now("a symlink") if os.path.islink(path) else "now reached through a symlink, not read")
    try:
        with open_regular(path, follow_symlinks=False) as f:
            data = f.read(limit + 1)
    except FileNotFoundError:
        return None
    except NotRegularFile as e:
        raise NotRead(_now(e.kind)) from None
    except OSError as e:
        raise NotRead(_now("a symlink") if e.errno == errno.ELOOP
                      else f"not readable now ({e.strerror or e})") from None
    if len(data) > limit:
        raise LargeNow(f"now over {limit:,} bytes, not read")
    return data


def _lines(data: bytes | None) -> list[str] | None:
    if data is None:
        return []
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", errors="replace").splitlines()


def _trim(before: list[str], after: list[str]) -> tuple[int, int]:
    """How many lines the two share at their start, and then at their end."""
    n = min(len(before), len(after))
    start = 0
    while start < n and before[start] == after[start]:
        start += 1
    end = 0
    while end < n - start and before[-1 - end] == after[-1 - end]:
        end += 1
    return start, end


def _distance(was: list[str], now: list[str], budget: int) -> int | None:
    """The fewest lines to remove and add to turn `was` into `now` (Myers' O(ND) search), or None
    when finding it would take more than `budget` steps: linear in the lines for a small change."""
    n, m = len(was), len(now)
    offset = n + m + 1
    v = [0] * (2 * offset + 1)
    work = 0
    for d in range(n + m + 1):
        for k in range(-d, d + 1, 2):
            if k == -d or (k != d and v[offset + k - 1] < v[offset + k + 1]):
                x = v[offset + k + 1]               # down: a line of `now` added
            else:
                x = v[offset + k - 1] + 1           # right: a line of `was` removed
            y, x0 = x - k, x
            while x < n and y < m and was[x] == now[y]:
                x, y = x + 1, y + 1
            v[offset + k] = x
            if x >= n and y >= m:
                return d
            work += 1 + x - x0
        if work > budget:
            return None
    return n + m


def _counts(before: list[str], after: list[str]) -> tuple[int, int]:
    """(added, removed), in time linear in the lines (see the module docstring)."""
    start, end = _trim(before, after)
    was, now = before[start:len(before) - end], after[start:len(after) - end]
    d = _distance(was, now, COUNT_WORK) if was and now else len(was) + len(now)
    if d is None:               # a large change: as multisets
        left = Counter(was)
        left.subtract(now)
        return -sum(v for v in left.values() if v < 0), sum(v for v in left.values() if v > 0)
    return (len(now) - len(was) + d) // 2, (len(was) - len(now) + d) // 2


class ChangedFiles:
    """The changed files list, kept current cheaply (see the module docstring). Thread-safe: the
    TUI asks from worker threads; one measures at a time, the others then find its figures."""

    def __init__(self, history: FileHistory) -> None:
        self.history = history
        self._cache: dict[str, tuple[tuple[int, ...] | None, FileChange]] = {}
        self._lock = threading.Lock()

    def files(self) -> list[FileChange]:
        """Every file the session changed, in the order first changed; unchanged ones left out."""
        with self._lock:
            changes = [self._change(path, copy) for path, copy in list(self.history.originals().items())]
        return [c for c in changes if c.state != "unchanged"]

    def totals(self) -> tuple[int, int, int]:
        """(files, lines added, lines removed)."""
        files = self.files()
        return len(files), sum(f.added for f in files), sum(f.removed for f in files)

    def _change(self, path: str, copy: Copy) -> FileChange:
        try:
            st = os.lstat(path)
            stamp: tuple[int, ...] | None = (st.st_mode, st.st_ino, st.st_size, st.st_mtime_ns)
        except OSError:
            stamp = None
        cached = self._cache.get(path)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        change = self._measure(path, copy)
        self._cache[path] = (stamp, change)
        return change

    def _measure(self, path: str, copy: Copy) -> FileChange:
        if copy.too_large:
            return FileChange(copy.shown, 0, 0, "too large")
        try:
            now = read_now(path)
        except LargeNow:
            return FileChange(copy.shown, 0, 0, LARGE, "large file, not counted")
        except NotRead as e:
            return FileChange(copy.shown, 0, 0, NOT_READ, e.note)
        try:
            was = self.history.content(copy)
        except OSError:             # its copy could not be written, or is gone
            return FileChange(copy.shown, 0, 0, "no copy")
        if now == was:
            return FileChange(copy.shown, 0, 0, "unchanged")
        if max(len(now or b""), len(was or b"")) > COUNT_MAX_BYTES:
            return FileChange(copy.shown, 0, 0, LARGE, "large file, not counted")
        before, after = _lines(was), _lines(now)
        if before is None or after is None:
            return FileChange(copy.shown, 0, 0, BINARY)
        added, removed = _counts(before, after)
        state = "created" if was is None else "deleted" if now is None else "modified"
        return FileChange(copy.shown, added, removed, state)


def unified_diff(shown: str, was: bytes | None, now: bytes | None, *, label_was: str = "before",
                 label_now: str = "now") -> str:
    """One file's diff, `was` to `now` (None: the file does not exist), at most DIFF_MAX_LINES lines."""
    before, after = _lines(was), _lines(now)
    if before is None or after is None:
        return f"Binary file {shown} differs\n"
    old = f"a/{shown} ({label_was})" if was is not None else "/dev/null"
    new = f"b/{shown} ({label_now})" if now is not None else "/dev/null"
    lines = list(difflib.unified_diff(before, after, old, new, n=DIFF_CONTEXT, lineterm=""))
    if len(lines) > DIFF_MAX_LINES:
        lines = lines[:DIFF_MAX_LINES] + [f"… {len(lines) - DIFF_MAX_LINES} more diff lines"]
    return "\n".join(lines) + "\n" if lines else ""


def session_diff(history: FileHistory) -> str:
    """Every changed file, as it was before the session to as it is now; a file that is no longer
    a regular file (or is too large now) is a line saying so."""
    parts = []
    for path, copy in list(history.originals().items()):
        if copy.too_large:
            parts.append(f"{copy.shown}: too large to compare (over {MAX_BYTES:,} bytes)\n")
            continue
        try:
            was = history.content(copy)
        except OSError:
            parts.append(f"{copy.shown}: its copy from before the session is gone\n")
            continue
        try:
            now = read_now(path)
        except NotRead as e:
            parts.append(f"{copy.shown}: {e.note}\n")
            continue
        if was != now:
            parts.append(unified_diff(copy.shown, was, now, label_was="before the session"))
    return "".join(parts)
