"""The session log as the loop writes it. A failed write (a full disk) raises SessionWriteError,
which ends the turn; the log is left a whole prefix of the history, and the next write first brings
it level again. State snapshots write only the parts that changed (the log merges them by key)."""
from __future__ import annotations

import hashlib
import json
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Mapping, Sequence

from compaction import Entry

from agent_core.loop.seams import SessionRecorder
from agent_core.sessions.session_log import SessionWriteError


class SessionWriter:
    """`history` reads the working history: what catching up writes."""

    def __init__(self, session: SessionRecorder, history: Callable[[], Sequence[Entry]]) -> None:
        self.session = session
        self._history = history
        self._behind = False         # a write failed: the next one first catches the log up
        self._paused = False         # while a failed write is being reported: write nothing
        self._digests: dict[str, bytes] = {}

    def write(self, write: Callable[[SessionRecorder], object], *, history: bool = False) -> bool:
        """Write; False when nothing was written (paused). `history`: the write is of the history,
        which catching up already wrote."""
        if self._paused:
            return False
        try:
            if self._behind:
                self.session.sync(self._history())
                self._behind = False
                self._digests.clear()
                if history:
                    return True
            write(self.session)
            return True
        except SessionWriteError:
            self._behind = True
            raise

    def entry(self, entry: Entry) -> bool:
        return self.write(lambda log: log.append_entry(entry), history=True)

    def whole_history(self) -> bool:
        """The working history replaced (a compaction, /clear, /rewind)."""
        return self.write(lambda log: log.append_history(self._history()), history=True)

    def event(self, event: Mapping[str, Any]) -> bool:
        return self.write(lambda log: log.append_event(event))

    def state(self, parts: Mapping[str, object]) -> None:
        """Snapshot what resume needs; only the parts that changed since the last snapshot."""
        changed, digests = {}, {}
        for key, value in parts.items():
            digest = hashlib.blake2b(json.dumps(value, sort_keys=True, default=str).encode(), digest_size=16).digest()
            if self._digests.get(key) != digest:
                digests[key] = digest
                changed[key] = value
        if changed and self.write(lambda log: log.append_state(changed)):
            self._digests.update(digests)

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Write nothing while a failed write is reported (the report itself would fail)."""
        self._paused = True
        try:
            yield
        finally:
            self._paused = False
