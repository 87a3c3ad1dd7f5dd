"""A session log as read back: what `session_reader.load_session` gives a resume.

The result alone, apart from the reader that builds it: the loop and the session log name this
type, and need none of the replay for it. Reading the log again for every entry ever logged
(`all_entries`) is the reader's job, which it hands over as `reread`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from compaction.entry import Entry

# Warning kinds, in the words of a one-line summary: (one, many).
WARNING_KINDS = {
    "line": ("unreadable line skipped", "unreadable lines skipped"),
    "state": ("state part of the wrong type ignored", "state parts of the wrong type ignored"),
    "history": ("entry named by a history record is missing", "entries named by history records are missing"),
    "usage": ("impossible usage figure skipped", "impossible usage figures skipped"),
    "meta": ("meta line missing", "meta lines missing"),
}
_OUTCOME = re.compile(r"; (skipped|ignored|left out)$")


@dataclass
class LoadedSession:
    meta: dict
    entries: list[Entry]             # the working history after the last whole line, repaired (see repair_history)
    state: dict                      # the state: snapshots merged, changes applied (pipeline, cost, permissions, ...)
    events: list[dict]               # those resume uses: all but the per-call tool, answer and turn-end ones (`read`)
                                     # and, from format 2 on, the model calls the state already counts
    warnings: list[str]
    path: Path | None = None
    skipped: int = 0                 # unreadable lines, and impossible usage figures (dropped)
    latest: dict[str, Entry] = field(default_factory=dict, repr=False)  # uuid -> newest version, of the history
    logged: list[Entry] = field(default_factory=list, repr=False)       # the working history as logged
    kinds: list[str] = field(default_factory=list, repr=False)          # the kind of each warning
    cut_tail: int = 0                # bytes of a cut-off last line (no newline, unreadable)
    # The model calls logged after the last state line: a run killed mid-turn logged them, but its
    # state (cost, API time) does not count them yet, so resume adds them.
    calls_after_state: list[dict] = field(default_factory=list, repr=False)
    # For the writer's checkpoint index (session_log.py): where the lines of the working history
    # (`logged`) and the kept events are, the log's line count; None when the log cannot be indexed.
    index: dict | None = field(default=None, repr=False)
    bytes_read: int = field(default=0, repr=False)   # bytes of the file read to load it
    # Every entry a log at `path` ever held, once per uuid, in its first form (session_reader.first_versions).
    reread: Callable[[Path], list[Entry]] | None = field(default=None, repr=False, compare=False)

    @property
    def session_id(self) -> str | None:
        return self.meta.get("session_id") or (self.path.stem if self.path else None)

    @property
    def all_entries(self) -> list[Entry]:
        """Every entry ever logged, once per uuid, in its first (original) form: read again from
        the log on demand, so a resume holds only the live history."""
        if self.path is None or self.reread is None:
            return list(self.latest.values())
        return self.reread(self.path)

    @property
    def repaired(self) -> bool:
        return len(self.entries) != len(self.logged) or any(a is not b for a, b in zip(self.entries, self.logged))

    def summary(self) -> list[str]:
        """One line per kind of warning, e.g. `3 unreadable lines skipped (first: line 7: not valid
        JSON)`, and one per repair: enough for a user to know the log was damaged and what was
        done about it, without a wall of text."""
        by_kind: dict[str, list[str]] = {}
        repairs = []
        for kind, msg in zip(self.kinds, self.warnings):
            if kind == "repair":
                repairs.append(f"repaired: {msg}")
            else:
                by_kind.setdefault(kind, []).append(_OUTCOME.sub("", msg))
        out = []
        for kind, msgs in by_kind.items():
            one, many = WARNING_KINDS.get(kind, ("problem", "problems"))
            out.append(f"1 {one} ({msgs[0]})" if len(msgs) == 1 else f"{len(msgs)} {many} (first: {msgs[0]})")
        return out + repairs
