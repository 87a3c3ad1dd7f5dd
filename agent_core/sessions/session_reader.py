"""Reading ctxtui's session logs: the one parser of their format (written by `session_log.SessionLog`).

Every reader of a ctxtui log goes through here: resume (`load_session`), a live view
(`SessionReplay.feed`), the session list and `ctxtui watch` (session_head.py: the meta line and the
first prompt), the usage records (`agent_core.logs.ctxtui_log`, with log_records.py's
`logged_entries` and `logged_event`) and the transcript browser. The record kinds are described in
session_log.py. This module replays the records into the working history; beside it are the state
records' half (replay_state.py), what a line's first bytes tell (late_read.py), the writer's
checkpoint index (checkpoint_index.py) and the result a resume gets (loaded_session.py).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from compaction.entry import Entry

from agent_core.pricing.cost import usage_problem
from agent_core.sessions.checkpoint_index import IndexedLog, make_index
from agent_core.sessions.late_read import (DELTA_HEAD, EVENT_HEAD, UNREAD_EVENTS, LoggedLine, Unread, carried,
                                           entry_uuid, event_type, history_uuids, whole_state)
from agent_core.sessions.loaded_session import LoadedSession
from agent_core.sessions.log_records import decode_line
from agent_core.sessions.logged_entry import entry_problem
from agent_core.sessions.logged_parts import LoggedParts, decode_compaction_line
from agent_core.sessions.repair import repair_history
from agent_core.sessions.replay_state import ReplayedState
from agent_core.sessions.working_history import WorkingHistory

READ_BUFFER = 1 << 18    # bytes read at a time: a long log reads several times faster than with 8 KiB


class SessionReplay:
    """Applies records one at a time; `load_session` uses it, and a live view can feed it the
    lines appended since it last looked.

    What it holds is the live history, not the log: from format 2 on (the meta line's `v`) a
    history record names only entries of the history before it or entries it carries, so the
    entries that left the history are let go. An older log may name any entry it ever logged:
    all are kept. `archive`: also keep each entry's first version (`hist.first`)."""

    use_index = True     # `read` starts from the last checkpoint's index when the log has one

    def __init__(self, archive: bool = False) -> None:
        self.archive = archive
        self._reset()

    def _reset(self) -> None:
        """Nothing read yet (`read` drops what a checkpoint index gave that did not check out)."""
        self.meta: dict = {}
        # The working history (working_history.py). It holds an `Unread` for each entry `read` put
        # off; `read` resolves them all before it returns (`history()`: the entries).
        self.hist = WorkingHistory(self.archive)
        self.state = ReplayedState(self._warn)   # the state records applied (replay_state.py)
        self._changes: list[tuple[bytes, int]] = []   # `read`: delta lines since the last whole copy
        self._late_calls: list[tuple[bytes, int]] = []   # `read`, format 2: model calls since the last state line
        self.calls_after_state: list[dict] = []
        self.events: list[dict] = []
        self.warnings: list[str] = []
        self.kinds: list[str] = []
        self.skipped = 0
        self.lines = 0
        self.cut_tail = 0
        self.bytes_read = 0
        self.via_index = False                    # `read`: the tail was read from the last checkpoint's index
        self.index_failed = False                 # `read`: the last checkpoint's index did not check out
        self.index: dict | None = None            # `read`: the locations the writer indexes (LoadedSession.index)
        self._at: tuple[int, int, int] | None = None   # `read`: (offset, length, line) of the line being fed
        self._eager: dict[int, tuple[Entry, list]] = {}   # id(entry) -> (entry, [off, len, line]), fed at once
        self._event_at: list[list[int]] = []      # [off, len, line] of each kept event (not the late model calls)
        self._history_at: list[int] | None = None  # [off, len, line] of the last history line

    def _warn(self, msg: str, kind: str = "line") -> None:
        self.warnings.append(msg)
        self.kinds.append(kind)

    def feed_line(self, line: bytes | str, lineno: int | None = None, last: bool = False) -> None:
        """One line without its newline. `last` marks a final line with no newline (cut off)."""
        self.lines += 1
        n = lineno if lineno is not None else self.lines
        size = len(line) if isinstance(line, bytes) else len(line.encode("utf-8", "surrogatepass"))
        try:
            rec = (isinstance(line, bytes) and decode_compaction_line(line)) or decode_line(line)
            if rec is None:
                return
        except RecursionError:
            self.skipped += 1
            self._warn(f"line {n}: nested too deeply to read; skipped")
            return
        except ValueError as e:  # UnicodeDecodeError included
            self.skipped += 1
            if last:
                self.cut_tail = size
                self._warn(f"line {n}: cut off mid-way (the session stopped while writing it); skipped")
            elif isinstance(e, UnicodeDecodeError):
                self._warn(f"line {n}: not UTF-8 text; skipped")
            else:
                self._warn(f"line {n}: not valid JSON; skipped")
            return
        try:
            self.feed(rec, n, line if isinstance(line, bytes) else None)
        except Exception as e:  # a well-formed line with a broken record (RecursionError included)
            self.skipped += 1
            self._warn(f"line {n}: unreadable {rec.get('t', '?')!r} record ({type(e).__name__}: {str(e)[:200]}); "
                       "skipped")

    @property
    def working(self) -> list[Entry | Unread]:
        """The working history, as fed so far."""
        return self.hist.working

    @property
    def lets_go(self) -> bool:
        """Whether entries that left the history can be let go (format 2 and later)."""
        v = self.meta.get("v")
        return isinstance(v, int) and not isinstance(v, bool) and v >= 2

    def read(self, path: Path) -> None:
        """Feed a whole log, one line at a time: memory follows the live history, not the file.
        What the end of the log makes moot is not decoded: an entry, logged or carried by a history
        record, is kept as its line until the history no longer holds it (`Unread`), a state
        change until a later whole copy (`all`) replaces it, and the per-call events resume does
        not use are passed over.

        A format 2 log whose last whole state carries the writer's checkpoint index is read from
        there: the meta line, the indexed lines (the working history's entries, the kept events)
        and the lines from the checkpoint on; anything in the index that does not check out is
        read the whole way instead, with the same result."""
        with open(path, "rb", buffering=READ_BUFFER) as f:
            start = None
            if not self.archive and self.use_index:
                try:
                    start = self._from_index(f.fileno())
                except Exception:    # an index of the wrong shape, a line not there: read it all
                    start = None
                if start is None:
                    if self.via_index or self.lines or self.meta:
                        spent = self.bytes_read
                        tried = self.via_index
                        self._reset()                     # what the index gave is dropped
                        self.bytes_read, self.index_failed = spent, tried
            off, first = start or (0, 0)
            f.seek(off)
            pos = off
            for n, raw in enumerate(f, first + 1):
                at = pos
                pos += len(raw)
                if not raw.endswith(b"\n"):   # no newline at the end: the final line may be incomplete
                    self._apply_changes()
                    self._feed_at(raw, n, at, len(raw) + 1, last=True)   # resume gives it its newline
                elif self.archive or not self._put_off(raw, n, at):
                    self._feed_at(raw[:-1], n, at, len(raw))
            self.bytes_read += pos - off
        self._apply_changes()
        for raw, n in self._late_calls:         # the calls the state does not count yet
            self.feed_line(raw[:-1], n)
        self._late_calls.clear()
        resolved = [self._read_entry(x) for x in self.hist.working]
        self.hist.now([e for e, _ in resolved if e is not None], let_go=True)
        self._make_index(resolved, n - (1 if self.cut_tail else 0))

    def _feed_at(self, raw: bytes, n: int, at: int, size: int, last: bool = False) -> None:
        """feed_line, noting where the line is for the index (entries and events it gives)."""
        self._at = (at, size, n)
        events = len(self.events)
        try:
            self.feed_line(raw, n, last=last)
        finally:
            self._at = None
        if len(self.events) > events:
            kind = event_type(raw) if raw.startswith(EVENT_HEAD) else None
            if kind not in UNREAD_EVENTS and not (kind == b"model_call" and self.lets_go):
                self._event_at.append([at, size, n])   # one a whole line of would be kept

    def _make_index(self, resolved: list, lines: int) -> None:
        """What the writer's next checkpoint index starts from (checkpoint_index.make_index): only
        for a format 2 log read without a warning (but for a cut-off last line, cut away on resume)."""
        self.index = None
        if self.archive or not self.lets_go or not self.meta:
            return
        if self.warnings and not (self.cut_tail and len(self.warnings) == 1 and "cut off mid-way" in self.warnings[0]):
            return
        self.index = make_index(resolved, lines, self._event_at, self._history_at)

    def _from_index(self, fd: int) -> tuple[int, int] | None:
        """Apply what the last checkpoint's index names (checkpoint_index.py); (offset, line number
        before it) to read on from, or None (nothing indexed, or something did not check out: read
        it all)."""
        log = IndexedLog(fd)
        try:
            meta = log.meta()
            if meta is None:
                return None
            self.feed(meta, 1)
            self.lines = 1
            tail = log.tail() if self.lets_go else None
        finally:
            self.bytes_read += log.bytes_read
            self.via_index = self.via_index or log.found
        if tail is None:
            return None
        if any(e.uuid in self.hist.pos for e, _ in tail.entries):
            return None
        for e, where in tail.entries:
            self._eager[id(e)] = (e, where)
        if tail.history is not None:
            self._history_at = tail.history
        self.hist.now([e for e, _ in tail.entries], let_go=True)
        for rec, line, where in tail.events:
            self.feed(rec, where[2], line)
            self._event_at.append(where)
        self.lines = tail.lines
        return tail.at, tail.lines

    def _put_off(self, raw: bytes, n: int, at: int = -1) -> bool:
        """Keep the line for later (or pass it over) when its first bytes say it may never be
        needed (late_read.py); False: feed it now."""
        if raw.startswith(EVENT_HEAD):
            kind = event_type(raw)
            if kind == b"model_call" and self.lets_go:
                # counted in the state (cost, `api_s`) once a state line follows: read only those after the last
                self._late_calls.append((raw, n))
            elif kind not in UNREAD_EVENTS:
                return False
        elif raw.startswith(DELTA_HEAD):
            self._changes.append((raw, n))      # counted when fed
            self._late_calls.clear()
            return True
        elif whole_state(raw):
            self._changes = [(raw, n)]          # the whole state: what came before it is moot
            self._late_calls.clear()
            return True
        elif (u := entry_uuid(raw)) is not None:
            i = self.hist.pos.get(u)
            x = Unread(u, LoggedLine(raw, n, off=at), None if i is None else self.hist.working[i])
            self.hist.put(x)
            self.hist.latest[u] = x
        elif (uuids := history_uuids(raw)) is not None and any(u in self.hist.latest for u in uuids):
            self._history_late(raw, n, uuids, at)
        else:
            return False
        self.lines += 1
        return True

    def _history_late(self, raw: bytes, n: int, uuids: list[str], at: int = -1) -> None:
        """A history record applied by the uuids it names, its new or changed entries read only
        if the history still holds them at the end (then one it carries that is not a usable
        message is left out, where a record read at once would not apply)."""
        line, carries = LoggedLine(raw, n, off=at), carried(raw)
        found: list[Entry | Unread] = []
        self._history_at = [at, len(raw), n] if at >= 0 else None
        for u in uuids:
            prev = self.hist.latest.get(u)
            if u in carries:
                if isinstance(prev, Unread) and prev.in_history:
                    prev = prev.prev        # at most one history line kept per entry
                found.append(Unread(u, line, prev, in_history=True))
            elif prev is not None:
                found.append(prev)
            else:
                self._warn(f"history record names entry {u[:40]} that the log does not hold; left out", "history")
        self.hist.now(found, self.lets_go)

    def _read_entry(self, x: "Entry | Unread | None") -> tuple[Entry | None, list | None]:
        """An entry put off by `read`, read now (an unreadable one: the version it replaced), and
        where its line is ([offset, length, line], None when not known)."""
        while isinstance(x, Unread):
            rec = self._decoded(x.line)
            if rec is not None:
                if x.in_history:
                    changed = rec.get("changed") if rec.get("t") == "history" else None
                    if isinstance(changed, Mapping) and x.uuid not in changed:
                        x = x.prev     # not carried after all: the version before stands
                        continue
                    d = changed.get(x.uuid) if isinstance(changed, Mapping) else None
                else:
                    d = rec.get("entry") if rec.get("t") == "entry" else None
                try:
                    if not isinstance(d, Mapping) or d.get("uuid") != x.uuid:
                        raise ValueError("not the entry its first bytes name")
                    where = [x.line.off, len(x.line.raw), x.line.lineno] if x.line.off >= 0 else None
                    return self._entry(d, x.line.lineno), where
                except (ValueError, RecursionError) as e:
                    self.skipped += 1
                    what = f"changed entry {x.uuid[:40]}" if x.in_history else "'entry' record"
                    self._warn(f"line {x.line.lineno}: unreadable {what} ({type(e).__name__}: {str(e)[:200]}); "
                               "skipped")
            x = x.prev
        if x is None:
            return None, None
        known = self._eager.get(id(x))
        return x, (known[1] if known is not None and known[0] is x else None)

    def _decoded(self, line: LoggedLine) -> dict | None:
        """A kept line's record, decoded once; None (a warning, once) when it cannot be."""
        if line.rec is None:
            try:
                line.rec = decode_line(line.raw[:-1]) or False
            except (ValueError, RecursionError) as e:
                line.rec = False
                self.skipped += 1
                what = "not UTF-8 text" if isinstance(e, UnicodeDecodeError) else "not valid JSON"
                self._warn(f"line {line.lineno}: {what}; skipped")
        return line.rec or None

    def _apply_changes(self) -> None:
        """The state put off by `read` (the last whole copy, the changes after it), in order."""
        changes, self._changes = self._changes, []
        for raw, n in changes:
            self.feed_line(raw[:-1], n)

    def _usage_ok(self, usage: Any, n: int, what: str) -> bool:
        """False (a warning, counted as skipped) for a usage figure no model call can report."""
        if usage is None or (problem := usage_problem(usage)) is None:
            return True
        self.skipped += 1
        self._warn(f"line {n}: {what}: {problem}; skipped", "usage")
        return False

    def _entry(self, d: Any, n: int) -> Entry:
        """A logged entry dict as an Entry; ValueError for one that is not a usable message
        (`entry_problem`). A usage figure out of range is dropped, the entry kept."""
        if (problem := entry_problem(d)) is not None:
            raise ValueError(problem)
        if not self._usage_ok(d.get("usage"), n, f"usage of entry {d['uuid'][:40]}"):
            d = {k: v for k, v in d.items() if k != "usage"}
        return Entry.from_dict(dict(d))

    def feed(self, rec: Mapping[str, Any], lineno: int | None = None, raw: bytes | None = None) -> None:
        """Apply one record. Raises (ValueError and others) for a record that cannot be applied:
        `feed_line` then skips the line, and the state it left stays as it was."""
        t = rec.get("t")
        n = lineno or self.lines
        if t == "meta":
            self.meta = {k: v for k, v in rec.items() if k != "t"}
        elif t == "entry":
            e = self._entry(rec.get("entry"), n)
            self.hist.remember(e)
            if self._at is not None:
                self._eager[id(e)] = (e, list(self._at))
            self.hist.put(e)
        elif t == "history":
            self._history(rec, n)
        elif t == "state":
            self.calls_after_state.clear()
            if rec.get("all") is True:      # the whole state: the changes before it are moot
                self._changes.clear()
            else:
                self._apply_changes()
            self.state.whole(rec, n)
        elif t == "delta":
            self.calls_after_state.clear()
            self._apply_changes()
            self.state.delta(rec, n)
        elif t == "event":
            ev = rec.get("event")
            ev = dict(ev) if isinstance(ev, Mapping) else {"value": ev}
            if "usage" in ev and not self._usage_ok(ev["usage"], n, f"usage of a {str(ev.get('type'))[:40]} event"):
                ev.pop("usage")
            if raw is not None and ev.get("type") == "compaction" and isinstance(ev.get("parts"), dict):
                ev["parts"] = LoggedParts(raw)      # its line's bytes, decoded when read (logged_parts.py)
            self.events.append(ev)
            if ev.get("type") == "model_call":
                self.calls_after_state.append(ev)
        else:
            raise ValueError(f"unknown record type {t!r}")

    def _history(self, rec: Mapping[str, Any], n: int) -> None:
        """A history record: the working history is now exactly the entries it names. A record
        of the wrong shape, or one carrying an entry that is not a usable message, or naming
        entries of which the log holds none, is not applied (ValueError: the line is skipped and
        the history stays as the lines before it left it); its readable entries are still
        remembered, for the records after it that name them."""
        uuids, changed = rec.get("uuids"), rec.get("changed") or {}
        if not isinstance(uuids, list) or not all(isinstance(u, str) for u in uuids):
            raise ValueError("'uuids' is not a list of entry ids")
        if len(set(uuids)) != len(uuids):
            raise ValueError("'uuids' names an entry twice")
        if not isinstance(changed, Mapping):
            raise ValueError("'changed' is not an object")
        new, bad = {}, None
        for u, d in changed.items():
            try:
                e = self._entry(d, n)
                if e.uuid != u:
                    raise ValueError(f"entry {str(u)[:40]} carries the uuid {e.uuid[:40]}")
            except ValueError as err:
                bad = bad or f"changed entry {str(u)[:40]}: {err}"
                continue
            new[u] = e
        for e in new.values():
            self.hist.remember(e)
            if self._at is not None:
                self._eager[id(e)] = (e, list(self._at))
        if bad is not None:
            raise ValueError(bad)
        found = [x for u in uuids if (x := new.get(u) or self.hist.latest.get(u)) is not None]
        if uuids and not found:
            raise ValueError(f"it names {len(uuids)} entr{'y' if len(uuids) == 1 else 'ies'}, none of which "
                             "the log holds")
        for u in uuids:
            if u not in new and u not in self.hist.latest:
                self._warn(f"history record names entry {u[:40]} that the log does not hold; left out", "history")
        self.hist.now(found, self.lets_go)
        self._history_at = list(self._at) if self._at is not None else None

    def history(self) -> list[Entry]:
        """The working history's entries: all of it, but while `read` runs (what it put off)."""
        return self.hist.entries()

    def result(self, path: Path | None = None, *, repair: bool = True) -> LoadedSession:
        """What was read; with `repair`, `entries` is the working history made valid to send
        (`repair_history`), each repair a warning."""
        self.state.check()
        working = self.history()
        warnings, kinds = list(self.warnings), list(self.kinds)
        entries = working
        if repair:
            entries, notes = repair_history(working)
            warnings += notes
            kinds += ["repair"] * len(notes)
        return LoadedSession(meta=dict(self.meta), entries=entries, state=dict(self.state.parts),
                             events=list(self.events), warnings=warnings, path=path, skipped=self.skipped,
                             latest={u: e for u, e in self.hist.latest.items() if isinstance(e, Entry)},
                             logged=working, kinds=kinds, cut_tail=self.cut_tail,
                             calls_after_state=list(self.calls_after_state), index=self.index,
                             bytes_read=self.bytes_read, reread=first_versions)


def first_versions(path: Path) -> list[Entry]:
    """Every entry a log ever held, once per uuid, in its first (original) form
    (`LoadedSession.all_entries`)."""
    replay = SessionReplay(archive=True)
    replay.read(path)
    return list(replay.hist.first.values())


def load_session(path: Path, *, repair: bool = True) -> LoadedSession:
    """Replay a session log. Unreadable lines are skipped and counted in `warnings`/`skipped`;
    with `repair` (the default) the history is made valid to send (`repair_history`)."""
    path = Path(path)
    replay = SessionReplay()
    replay.read(path)
    if not replay.meta:
        replay.warnings.insert(0, "no meta line: the log's first line is missing or unreadable")
        replay.kinds.insert(0, "meta")
    return replay.result(path, repair=repair)

