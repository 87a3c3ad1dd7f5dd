"""The working history and the session's compactions, written to the session log as they change.
Every change goes through here, so the log stays a whole prefix of what is in memory and the
compactions the timeline and the inspector show are the ones that happened."""
from __future__ import annotations

from typing import Callable, Sequence

from compaction import Entry, Pipeline
from compaction.report import CompactionReport

from agent_core import events as ev
from agent_core.loop.compaction_events import report_events
from agent_core.loop.packed_parts import PARTS_LIVE, pack_older
from agent_core.loop.seams import SessionRecorder
from agent_core.loop.session_writer import SessionWriter
from agent_core.sessions.valid_text import valid_entry

Emit = Callable[[ev.Event], None]


class History:
    """`on_compaction` is told of each compaction kept (the cache watch and the count confirmation
    must know the prefix was rewritten)."""

    def __init__(self, session: SessionRecorder, entries: Sequence[Entry] | None,
                 compactions: Sequence[ev.Compaction] | None, on_compaction: Callable[[], None]) -> None:
        self.entries: list[Entry] = list(entries or [])
        self.compactions: list[ev.Compaction] = list(compactions or [])
        pack_older(self.compactions)
        self.log = SessionWriter(session, lambda: self.entries)
        self._on_compaction = on_compaction

    def append(self, entry: Entry) -> None:
        entry = valid_entry(entry)   # text that cannot be encoded would break every later request
        self.entries.append(entry)
        self.log.entry(entry)

    def adopt(self, new_entries: list[Entry]) -> None:
        """The history a layer, a rewind or the server left (logged whole, unless it is the same)."""
        if new_entries is self.entries:
            return
        if len(new_entries) == len(self.entries) and all(a is b for a, b in zip(new_entries, self.entries)):
            return
        self.entries = list(new_entries)
        self.log.whole_history()

    def replace(self, entries: list[Entry]) -> None:
        """/clear and /rewind: the working history cut, the log told (it keeps everything)."""
        self.entries = entries
        self.log.whole_history()

    def keep(self, c: ev.Compaction) -> None:
        """Keep a compaction for the timeline and inspector; older ones' parts go compressed."""
        self.compactions.append(c)
        pack_older(self.compactions[-PARTS_LIVE - 1:])
        self._on_compaction()

    def say(self, events: Sequence[ev.Event], emit: Emit) -> bool:
        """Say compaction events, keeping each compaction; True when one compacted."""
        compacted = False
        for e in events:
            if isinstance(e, ev.Compaction):
                self.keep(e)
                compacted = True
            emit(e)
        return compacted

    def adopt_reports(self, entries: list[Entry], reports: Sequence[CompactionReport], pipeline: Pipeline,
                      emit: Emit) -> bool:
        """A pipeline run's outcome: its history adopted and its reports said (the last compaction
        carries what the run changed); True when it compacted."""
        before = self.entries
        self.adopt(entries)
        return self.say(report_events(reports, pipeline, before, self.entries), emit)
