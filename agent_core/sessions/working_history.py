"""The working history as a session log's records rebuild it: its entries in order, found by uuid.

The history half of the replay (session_reader.SessionReplay), apart from the records that change it:
an `entry` record puts an entry in (or in its own place), a `history` record makes the history exactly
the entries it names. Besides the list it keeps the newest version of each entry (`latest`), which a
later history record may name again, and, for the transcript of every entry ever logged, the first
(`first`, with `archive`). An `Unread` (late_read.py) stands for an entry whose line is not decoded yet.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from compaction.entry import Entry

from agent_core.sessions.late_read import Unread


@dataclass
class WorkingHistory:
    archive: bool = False     # also keep each entry's first version (`first`)
    working: list[Entry | Unread] = field(default_factory=list)
    pos: dict[str, int] = field(default_factory=dict)                 # uuid -> index in working
    latest: dict[str, Entry | Unread] = field(default_factory=dict)   # uuid -> newest version seen
    first: dict[str, Entry] = field(default_factory=dict)   # with `archive`: uuid -> first version seen, in order

    def remember(self, e: Entry) -> None:
        """An entry read, that a history record may name from now on."""
        self.latest[e.uuid] = e
        if self.archive:
            self.first.setdefault(e.uuid, e)

    def put(self, x: Entry | Unread) -> None:
        """An entry record's entry: at the end of the history, or in its own place when it is there."""
        i = self.pos.get(x.uuid)
        if i is None:
            self.pos[x.uuid] = len(self.working)
            self.working.append(x)
        else:
            self.working[i] = x

    def now(self, found: list[Entry | Unread], let_go: bool) -> None:
        """The history is now exactly `found`; `let_go`: the entries that left it are forgotten
        (from format 2 on no later record names them)."""
        self.working = found
        self.pos = {x.uuid: i for i, x in enumerate(found)}
        if let_go:
            self.latest = {x.uuid: x for x in found}
        else:
            self.latest.update((x.uuid, x) for x in found)

    def entries(self) -> list[Entry]:
        """The entries of the history, less those not read yet."""
        return [e for e in self.working if isinstance(e, Entry)]
