"""The session's changes to files, from the file history: lines added and removed per file (the
changed files list of `/cost` and the side pane) and the unified diff (`/diff`, and what `/rewind`
shows before it puts files back).

Counts are taken against the file as it was before the session first changed it, so a file edited
ten times is one row and an edit undone by a later one counts nothing. A file's figures are kept
while its size and modification time stay the same: the side pane asks after every tool call, and
only the file just written is read again."""
from __future__ import annotations

import difflib
import os
from dataclasses import dataclass

from agent_core.tools.file_history import MAX_BYTES, Copy, FileHistory

DIFF_CONTEXT = 3
DIFF_MAX_LINES = 2_000       # per file in /diff; the rest is counted, not shown
BINARY = "binary"
UNCOUNTED = frozenset({BINARY, "too large", "no copy"})   # listed, without lines added and removed


@dataclass(frozen=True)
class FileChange:
    shown: str
    added: int
    removed: int
    state: str          # "created", "modified", "deleted", "binary", "too large", "no copy", "unchanged"

    @property
    def label(self) -> str:
        if self.state in UNCOUNTED:
            return self.state
        return f"+{self.added} −{self.removed}"


def read_now(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def _lines(data: bytes | None) -> list[str] | None:
    if data is None:
        return []
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", errors="replace").splitlines()


def _counts(before: list[str], after: list[str]) -> tuple[int, int]:
    added = removed = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
        if tag in ("replace", "delete"):
            removed += i2 - i1
        if tag in ("replace", "insert"):
            added += j2 - j1
    return added, removed


class ChangedFiles:
    """The changed files list, kept current cheaply (see the module docstring)."""

    def __init__(self, history: FileHistory) -> None:
        self.history = history
        self._cache: dict[str, tuple[tuple[int, int] | None, FileChange]] = {}

    def files(self) -> list[FileChange]:
        """Every file the session changed, in the order first changed; unchanged ones left out."""
        out = []
        for path, copy in self.history.originals().items():
            change = self._change(path, copy)
            if change.state != "unchanged":
                out.append(change)
        return out

    def totals(self) -> tuple[int, int, int]:
        """(files, lines added, lines removed)."""
        files = self.files()
        return len(files), sum(f.added for f in files), sum(f.removed for f in files)

    def _change(self, path: str, copy: Copy) -> FileChange:
        try:
            st = os.stat(path)
            stamp: tuple[int, int] | None = (st.st_size, st.st_mtime_ns)
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
        now = read_now(path)
        try:
            was = self.history.content(copy)
        except OSError:             # its copy could not be written, or is gone
            return FileChange(copy.shown, 0, 0, "no copy")
        if now == was:
            return FileChange(copy.shown, 0, 0, "unchanged")
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
    """Every changed file, as it was before the session to as it is now."""
    parts = []
    for path, copy in history.originals().items():
        if copy.too_large:
            parts.append(f"{copy.shown}: too large to compare (over {MAX_BYTES:,} bytes)\n")
            continue
        try:
            was = history.content(copy)
        except OSError:
            parts.append(f"{copy.shown}: its copy from before the session is gone\n")
            continue
        now = read_now(path)
        if was != now:
            parts.append(unified_diff(copy.shown, was, now, label_was="before the session"))
    return "".join(parts)

