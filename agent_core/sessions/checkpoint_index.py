"""The writer's checkpoint index, read back: where in a long log the live history and kept events are.

Every whole `state` line session_log.py writes carries an index of the lines that hold the working
history's entries and the events resume keeps (its format is described there). A resume reads the
meta line, finds the last such checkpoint from the end, reads the lines its index names and then
the log from the checkpoint on, not the whole file (session_reader.SessionReplay.read). Every line
is checked against what the index says of it (its place, length, kind and uuid); anything that does
not check out gives None, and the reader reads the whole log instead. `make_index` is the other way
round: what a resume hands the writer for its next checkpoint.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from compaction.entry import Entry

from agent_core.pricing.cost import usage_problem
from agent_core.sessions.late_read import EVENT_HEAD, HISTORY_HEAD, STATE_HEAD, UNREAD_EVENTS, entry_uuid, event_type, \
    whole_state
from agent_core.sessions.log_records import decode_line
from agent_core.sessions.logged_entry import entry_problem
from agent_core.sessions.logged_parts import decode_compaction_line

BACK_BLOCK = 1 << 18     # bytes read at a time when looking for the last checkpoint from the end
BACK_LIMIT = 16 << 20    # how far back a checkpoint is looked for (the writer makes one every 4 MiB or less)
CHECKPOINT_AT = b'\n' + STATE_HEAD


@dataclass
class IndexedTail:
    """What the last checkpoint's index names, read and checked; the log is read on from `at`."""
    at: int                    # offset of the checkpoint line
    lines: int                 # the line count before it
    entries: list[tuple[Entry, list[int]]] = field(default_factory=list)   # the working history, in order,
                                                                           # each with [offset, length, line]
    history: list[int] | None = None          # [offset, length, line] of the last history line
    events: list[tuple[dict, bytes, list[int]]] = field(default_factory=list)   # kept events: record, line, where


class IndexedLog:
    """A log file read where its checkpoint index points (os.pread: the file's position is left
    alone), counting the bytes it reads (`bytes_read`)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.size = os.fstat(fd).st_size
        self.bytes_read = 0
        self.found = False           # an index was found (whether or not it then checked out)

    def _pread(self, size: int, off: int) -> bytes:
        data = os.pread(self.fd, size, off)
        self.bytes_read += len(data)
        return data

    def _line_at(self, off: int, size: int) -> bytes:
        """The whole line of `size` bytes (newline included) at `off`; ValueError if it is not one."""
        if not (isinstance(off, int) and isinstance(size, int)) or off < 1 or size < 2:
            raise ValueError("not a line")
        data = self._pread(size + 1, off - 1)
        if len(data) != size + 1 or data[:1] != b"\n" or data[-1:] != b"\n":
            raise ValueError("not a whole line")
        return data[1:]

    def _read_line(self, off: int, have: bytes) -> bytes | None:
        """The line at `off` (`have`: its first bytes, read already); None if it has no newline."""
        end = have.find(b"\n")
        if end >= 0:
            return have[:end + 1]
        parts, at = [have], off + len(have)
        while True:
            chunk = self._pread(1 << 16, at)
            if not chunk:
                return None
            end = chunk.find(b"\n")
            if end >= 0:
                parts.append(chunk[:end + 1])
                return b"".join(parts)
            parts.append(chunk)
            at += len(chunk)

    def _last_checkpoint(self) -> tuple[int, bytes] | None:
        """(offset, line) of the last whole `state` line that ends in a newline, scanning back
        from the end in blocks; None when there is none near enough the end."""
        size = self.size
        pos, carry = size, b""
        while pos > 0 and size - pos < BACK_LIMIT:
            start = max(0, pos - BACK_BLOCK)
            block = self._pread(pos - start, start)
            buf = block + carry
            p = buf.rfind(CHECKPOINT_AT)
            while p >= 0:
                line_off = start + p + 1
                if whole_state(buf[p + 1:p + 1 + 80]):
                    line = self._read_line(line_off, buf[p + 1:])
                    if line is not None:
                        return line_off, line
                p = buf.rfind(CHECKPOINT_AT, 0, p)
            carry = block[:128]
            pos = start
        return None

    def meta(self) -> dict | None:
        """The meta record, when the log's first line is one written by session_log.py."""
        head = self._pread(1 << 12, 0)
        if not head.startswith(b'{"t":"meta",') or (meta_line := self._read_line(0, head)) is None:
            return None
        meta = decode_line(meta_line[:-1])
        if not isinstance(meta, dict) or meta.get("t") != "meta":
            return None
        return meta

    def tail(self) -> IndexedTail | None:
        """Read what the last checkpoint's index names; None when nothing is indexed or something
        did not check out (an index of the wrong shape may also raise: the caller reads it all)."""
        found = self._last_checkpoint()
        if found is None:
            return None
        at, raw = found
        index = json.loads(raw).get("index")
        if not isinstance(index, dict):
            return None
        self.found = True
        lineno = index["line"]
        if not isinstance(lineno, int) or lineno < 2:
            return None
        out = IndexedTail(at, lineno - 1)
        lines: dict[int, tuple[bytes, dict]] = {}

        def record(off: int, length: int, keep: bool = True) -> tuple[bytes, dict]:
            """The line at `off` and its record (`keep`: for the entries sharing a history line)."""
            if off not in lines:
                if not (isinstance(off, int) and isinstance(length, int) and 0 < off and off + length <= at):
                    raise ValueError("not a line before the checkpoint")
                line = self._line_at(off, length)
                rec = decode_compaction_line(line) or decode_line(line[:-1])
                if not isinstance(rec, dict):
                    raise ValueError("blank")
                if not keep:
                    return line, rec
                lines[off] = (line, rec)
            line, rec = lines[off]
            if len(line) != length:
                raise ValueError("not that line")
            return lines[off]

        seen: set[str] = set()
        for u, off, length, n in index["entries"]:
            line, rec = record(off, length)
            d: Any
            if entry_uuid(line) == u and rec.get("t") == "entry":
                d = rec.get("entry")
            elif line.startswith(HISTORY_HEAD) and rec.get("t") == "history" and isinstance(rec.get("changed"), dict):
                d = rec["changed"].get(u)
            else:
                return None
            if not isinstance(d, Mapping) or d.get("uuid") != u or u in seen:
                return None
            if d.get("usage") is not None and usage_problem(d["usage"]) is not None:
                return None
            if (problem := entry_problem(d)) is not None:     # as SessionReplay._entry reads one
                raise ValueError(problem)
            seen.add(u)
            out.entries.append((Entry.from_dict(dict(d)), [off, length, n]))
        history = index.get("history")
        if history is not None:
            line, rec = record(history[0], history[1])
            if rec.get("t") != "history" or not line.startswith(HISTORY_HEAD):
                return None
            out.history = list(history)
        lines.clear()
        for off, length, n in index["events"]:
            line, rec = record(off, length, keep=False)
            kind = event_type(line)
            if rec.get("t") != "event" or not line.startswith(EVENT_HEAD) or kind in UNREAD_EVENTS \
                    or kind == b"model_call" or not isinstance(rec.get("event"), Mapping):
                return None
            usage = rec["event"].get("usage")
            if usage is not None and usage_problem(usage) is not None:
                return None
            out.events.append((rec, line, [off, length, n]))
        return out


def make_index(resolved: Iterable[tuple[Entry | None, list | None]], lines: int, events: list[list[int]],
               history: list[int] | None) -> dict | None:
    """What the writer's next checkpoint index starts from: every entry of the history (`resolved`:
    each with [offset, length, line], None when not known) found at a known line; None otherwise."""
    entries = []
    for e, where in resolved:
        if e is None:
            continue
        if where is None:
            return None
        entries.append([e.uuid, *where])
    return {"lines": lines, "entries": entries, "events": list(events), "history": history}
