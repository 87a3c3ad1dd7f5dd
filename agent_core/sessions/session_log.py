"""The session log: `<state>/sessions/<id>.jsonl` (agent_core/sessions/paths.py), append-only, one JSON object
per line, written with one `write` and flushed per line so a crash loses at most the line being
written; meta, history, state and delta lines are also fsync'ed.

Records (`t` says which):
    {"t": "meta", "v": 2, "session_id", "created", "model", "workspace", "version", ...}   first line
    {"t": "entry", "entry": Entry.to_dict()}       a new entry at the end of the working history
                                                   (an entry whose uuid is already there replaces it in place)
    {"t": "history", "uuids": [...], "changed": {uuid: entry_dict}, "at"}
                                                   the working history was rewritten (compaction): it is now
                                                   exactly these uuids; entries that are new or whose content
                                                   changed are carried in `changed`, the rest are the latest
                                                   version of an entry of the history before it (format 1:
                                                   of any entry the log holds)
    {"t": "state", "at", "all": true, ...}         the whole state: pipeline, cost, permissions, turns, the
                                                   context plot, notes (format 1: some parts, no `all`;
                                                   parts merge, later ones win)
                                                   `index` (not a part): the checkpoint index, below
    {"t": "delta", "at", "ops": [...]}             what changed in the state since the line before, as
                                                   operations on its parts (set, del, splice: state_delta.py)
    {"t": "event", "at", "event": {...}}           events worth keeping (compaction, error, context, ...)

The state changes a little after every model call, so it is written as changes, and whole again
(a run's first state, then once the changes since the last whole copy add up to CHECKPOINT_EVERY
copies of it). The log thus grows with what the session adds, and a reader applies only the
changes after the last whole copy (CHECKPOINT_BYTES bounds the log between two whole copies).

A whole copy written by this writer carries a checkpoint index, `"index": {"line": its line number,
"entries": [[uuid, offset, length, line], ...] (the working history, in order: the line holding each
entry's latest version, an `entry` line or a `history` line carrying it in `changed`), "history":
[offset, length, line] of the last history line (or null), "events": [[offset, length, line], ...]
(every event resume keeps: all but the per-call ones, so compactions, notices, errors)}`. The
writer knows each line's offset (`_write_raw`; a cut-off last line is cut away and a lost newline
restored before anything is appended at resume). It writes no index when it cannot know it all:
a log read with a warning, a format 1 log, a half line a failed write left. Resume then reads
the meta line, the last checkpoint found from the end, the lines its index names and the lines
after it (session_reader.SessionReplay._from_index); anything that does not check out is read
the whole way instead. Format 1 (before `delta` records) wrote every changed part
whole after nearly every call; such a log still resumes the same.

Replaying the records in order, one line at a time, rebuilds the working history and the state
exactly (`session_reader.load_session`, the one reader of this format; the repairs are in
repair.py), holding only the live history (format 1: every entry, which its history records may
name). What the rest of the log makes moot is never decoded (late_read.py): entries that leave the
history, changes before the last whole copy of the state, the per-call events resume does not use.
A line cut off mid-way or otherwise unreadable, an entry that is not a message the API accepts
(logged_entry.py), a history record that cannot apply (the history stays as the lines before it
left it; one of this writer's, read late, leaves out just the entry it cannot read), or a state
part of the wrong type or with figures no session reaches, is skipped with a warning, never an
exception; so is a usage figure no model call can report (its entry is kept), and a state change
that does not apply (its part is dropped until the state is written whole again).
Loading also repairs what a crash, an old bug or a damaged log can leave behind, so the next
request is valid: a tool call with no result gets an "Interrupted" error result, a tool result
whose call is gone is dropped, and invalid Unicode is replaced (the rest: repair.py).
`SessionLog.open` logs the repair and cuts away a cut-off last line.

A folder or log that cannot be written (permissions, an immutable flag, a read-only mount) is a
`StateFolderError` (exit 2) when the session is opened, before anything is sent: a new session's
folder is tested with a real write, since a lazy log writes nothing until its first content.

A new session made `lazy` writes nothing until it has content: its file (and its private folder
`<id>/`, 0700) appear with the first record that is not state, so a session that never
got a prompt (a failed `/model X`, a `/clear` then quit) leaves no empty log behind for `/resume`.

One writer per session: a `SessionLog` holds an exclusive `flock` on its log for its whole life
(its pid is written next to the log, in `<id>.pid`, for the message a second writer gets). A
write that fails (disk full) is cut back so no half line is left, and raises `SessionWriteError`.

No secret is ever written: the secret values handed in (and the API key in the environment) are
registered with the one scrubber (compaction.scrub), and every line passes through it before it
reaches disk.
"""
from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from secrets import token_hex
from typing import Any, Iterable, Iterator, Mapping, Sequence

from compaction import clock
from compaction.entry import Entry
from compaction.scrub import REDACTED, register_secret, scrub_counted
from compaction.transcript import DIR_MODE, FILE_MODE, ensure_private_dir

from agent_core.config_error import ConfigError
from agent_core.security.credentials import SECRET_ENV_VARS
from agent_core.sessions.paths import UnsafeDir, new_session_id, session_log_path
from agent_core.sessions.loaded_session import LoadedSession
from agent_core.sessions.session_reader import load_session
from agent_core.sessions.state_delta import diff
from agent_core.version import __version__

FORMAT_VERSION = 2   # 2: `delta` records; a history record re-sends an entry that had left the history
CHECKPOINT_EVERY = 4  # changes logged between whole copies of the state, in copies of it
CHECKPOINT_BYTES = 4 << 20   # and at most this much log between them: resume reads from the last one
UNINDEXED_EVENTS = frozenset({"tool_call", "tool_result", "assistant_done", "turn_finished", "model_call"})
FSYNC_RECORDS = frozenset({"meta", "history", "state", "delta"})


class SessionInUse(ConfigError):
    """Another ctxtui is writing this session (exit 2 at the CLI, like any unusable setting)."""

    def __init__(self, session_id: str, pid: int | None) -> None:
        who = f"pid {pid}" if pid else "pid unknown"
        if pid == os.getpid():
            msg = f"session {session_id} is already open in this ctxtui ({who})"
        else:
            msg = (f"session {session_id} is in use by another ctxtui ({who}); wait for it to finish or start a "
                   "new session")
        super().__init__(msg)
        self.session_id, self.pid = session_id, pid


class SessionWriteError(OSError):
    """A session log write failed; the log was cut back to its last whole line, so the session
    can still be resumed once the cause is fixed."""

    def __init__(self, message: str, err: int | None = None) -> None:
        super().__init__(err, message)
        self.message = message

    def __str__(self) -> str:
        return self.message

    @classmethod
    def of(cls, e: OSError, path: Path) -> "SessionWriteError":
        if e.errno == errno.ENOSPC:
            what = "the disk is full: the session log could not be written; free space, then --continue"
        elif e.errno == errno.EDQUOT:
            what = "the disk quota is used up: the session log could not be written; free space, then --continue"
        else:
            what = (f"the session log could not be written ({e.strerror or e}); fix that, then --continue")
        return cls(f"{what} (log {path})", e.errno)


class StateFolderError(ConfigError):
    """The session folder or a log in it cannot be used: not a real folder of ours, or not
    writable (exit 2 at the CLI, before anything is sent). The message names the folder and
    says what to do."""


def not_writable_message(path: Path, e: OSError) -> str:
    what = e.strerror or str(e)
    where = Path(e.filename) if e.filename else Path(path)
    if e.errno == errno.EROFS:
        how = "it is on a read-only file system; remount it read-write"
    elif e.errno == errno.EPERM:
        how = "make it writable (an immutable flag, `lsattr`, or a security policy can forbid writes even to root)"
    else:
        how = "make it writable by you (`ls -ld` shows its owner and mode)"
    return (f"cannot write ctxtui's session files: {where}: {what}. {how[0].upper()}{how[1:]}, or point "
            f"CTXTUI_HOME (or --home) at a folder you can write.")


@contextmanager
def state_folder_errors(folder: Path) -> Iterator[None]:
    """Folder set-up errors as a StateFolderError: an unsafe folder (UnsafeDir) with its own
    message, any other OSError (EACCES, EPERM, EROFS, ...) as `not_writable_message`."""
    try:
        yield
    except FileExistsError:
        raise
    except UnsafeDir as e:
        raise StateFolderError(str(e)) from None
    except OSError as e:
        raise StateFolderError(not_writable_message(folder, e)) from None


def check_writable(folder: Path) -> None:
    """Create and remove a file in `folder`: the one test that sees every reason a write can be
    refused (permissions, an immutable flag, a read-only mount, a security policy), for root too.
    Raises an OSError naming the folder."""
    probe = Path(folder) / f".write-test-{os.getpid()}-{token_hex(4)}"
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE))
        os.unlink(probe)
    except OSError as e:
        raise OSError(e.errno, e.strerror, str(folder)) from None


def _dumps(obj: Any) -> str:
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=str)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates (undecodable tool output): escape them instead
        text = json.dumps(obj, ensure_ascii=True, separators=(",", ":"), default=str)
    return text


def _digest(entry_dict: Mapping) -> bytes:
    return hashlib.blake2b(json.dumps(entry_dict, sort_keys=True, ensure_ascii=True, default=str).encode(),
                           digest_size=16).digest()


# ---------------------------------------------------------------- writing

def _read_pid(path: Path) -> int | None:
    """The pid in a writer's `<id>.pid` file, or None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as f:
            text = f.read(32).strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None




class SessionLog:
    """The writer. Create one with `SessionLog.create` (new session) or `SessionLog.open` (resume);
    `open` also gives the replayed session as `.loaded`."""

    def __init__(self, path: Path, session_id: str, secrets: Iterable[str] = (), *, new: bool = False,
                 lazy: bool = False) -> None:
        self.path = Path(path)
        self.session_id = session_id
        register_secret(*secrets, *(os.environ.get(k) for k in SECRET_ENV_VARS))
        self._known: dict[str, bytes] = {}     # uuid -> digest, for the entries of the working history
        self._state: dict[str, Any] = {}        # the state as a reader of the log rebuilds it
        self._full = 0                          # bytes of the last whole copy of the state (`state` record)
        self._since: int | None = None          # bytes of changes logged since; None: a whole copy is due
        self._working: list[Entry] = []        # the working history as the log describes it
        self._pos: dict[str, int] = {}         # uuid -> index in _working
        # The checkpoint index (written in each whole state record): where each entry of the working
        # history was last logged, the kept events, the last history line; `_lines`: lines in the log.
        self._indexable = True
        self._where: dict[str, list[int]] = {}     # uuid -> [offset, length, line] of its latest version
        self._events_at: list[list[int]] = []
        self._history_at: list[int] | None = None
        self._lines = 0
        self._last_at: list[int] = [0, 0, 0]        # [offset, length, line] of the last line written
        self._checkpoint_end = 0                   # file size after the last whole state
        self._lock = threading.Lock()
        self.redactions = 0
        self.loaded: LoadedSession | None = None
        self._fd: int | None = None
        with state_folder_errors(self.path.parent):
            ensure_private_dir(self.path.parent.parent)   # the workspace's state folder
            ensure_private_dir(self.path.parent)          # .../sessions
            if lazy and new:
                check_writable(self.path.parent)          # said now, not at the first write mid-turn
        self._newline_owed = False             # a failed write could not be cut back: start the next on a new line
        # A lazy new log: the meta record and the state snapshots waiting for the first content.
        self._pending: list[Mapping[str, Any]] | None = [] if (lazy and new) else None
        if self._pending is None:
            self._open_file(new)

    def _open_file(self, new: bool) -> None:
        """Open (or create) the log and its private folder, and take the writer's lock. A folder
        or log that cannot be written is a StateFolderError naming it."""
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | (os.O_EXCL if new else 0)
        with state_folder_errors(self.path.parent):
            ensure_private_dir(self.path.with_suffix(""))   # <id>/: transcripts, tool results; 0700 first
            check_writable(self.path.with_suffix(""))       # a resumed session writes there too
            try:
                fd = os.open(self.path, flags, FILE_MODE)
            except FileExistsError:
                raise FileExistsError(f"session {self.session_id} already exists at {self.path}") from None
        os.fchmod(fd, FILE_MODE)
        self._fd = fd
        try:
            self._take_lock(fd)
        except BaseException:
            os.close(fd)
            self._fd = None
            raise

    # -- one writer

    @property
    def pid_path(self) -> Path:
        """Where the writer's pid is kept while it holds the session (for the in-use message)."""
        return self.path.with_suffix(".pid")

    def _take_lock(self, fd: int) -> None:
        """Hold the session for this writer's life: a second writer would interleave its history
        with ours. The lock goes with the process, so a killed run never leaves the session locked."""
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SessionInUse(self.session_id, _read_pid(self.pid_path)) from None
        try:
            fd = os.open(self.pid_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, FILE_MODE)
            with os.fdopen(fd, "w") as f:
                f.write(f"{os.getpid()}\n")
        except OSError:
            pass   # only the message loses the pid

    def _release_lock(self) -> None:
        try:
            if _read_pid(self.pid_path) == os.getpid():
                self.pid_path.unlink()
        except OSError:
            pass

    # -- construction

    @classmethod
    def create(cls, home: Path, meta: Mapping[str, Any] | None = None, *, secrets: Iterable[str] = (),
               session_id: str | None = None, now: float | None = None, lazy: bool = False) -> "SessionLog":
        """Start a new session log and write its meta line (`lazy`: with the first content)."""
        now = clock.now() if now is None else now
        sid = session_id or new_session_id(now)
        log = cls(session_log_path(Path(home), sid), sid, secrets, new=True, lazy=lazy)
        rec = {"t": "meta", "v": FORMAT_VERSION, "session_id": sid,
               "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)), "version": __version__,
               **{k: v for k, v in (meta or {}).items() if k not in ("t", "v", "session_id")}}
        log._write(rec)
        return log

    @classmethod
    def open(cls, home: Path, session_id: str, *, secrets: Iterable[str] = (), repair: bool = True) -> "SessionLog":
        """Reopen an existing session for appending (resume), repairing and logging what a crash
        left (`repair_history`) unless `repair` is false. Raises FileNotFoundError with the path
        when there is no such session, SessionInUse when another writer holds it."""
        path = session_log_path(Path(home), session_id)
        if not path.is_file():
            raise FileNotFoundError(f"no session {session_id!r} (looked for {path})")
        log = cls(path, session_id, secrets)     # takes the lock before anything is read
        try:
            log._resume(repair)
        except BaseException:
            log.close()
            raise
        return log

    def _resume(self, repair: bool) -> None:
        """Read the log, make its end clean and log the repairs `load_session` made, so the
        session's next request is valid."""
        loaded = self.loaded = load_session(self.path, repair=repair)
        self._set_working(loaded.logged)
        index = loaded.index
        if index is None or len(index["entries"]) != len(loaded.logged):
            self._indexable = False
        else:
            self._where = {u: [off, n, line] for u, off, n, line in index["entries"]}
            self._events_at = [list(x) for x in index["events"]]
            self._history_at = index["history"]
            self._lines = index["lines"]
        # The writer's view must match what a reader rebuilds: the newest version of each entry of
        # the history (one that comes back later is logged again), and the merged state.
        self._known = {e.uuid: _digest(e.to_dict()) for e in loaded.logged}
        self._state = json.loads(_dumps(loaded.state))   # a resumed session's first state is a whole copy
        fd = self._fd
        if fd is None:                    # `resume` opened it; nothing closes it before this runs
            raise ValueError(f"session log {self.path} is closed")
        size = os.fstat(fd).st_size
        if loaded.cut_tail:
            os.ftruncate(fd, size - loaded.cut_tail)   # the line the crash cut off: never whole
        elif size and not self._last_byte_is_newline(size):
            self._write_raw(b"\n", line=False)    # a whole record that only lost its newline
        if loaded.repaired:
            self.sync(loaded.entries)

    def _last_byte_is_newline(self, size: int) -> bool:
        with open(self.path, "rb") as f:
            f.seek(size - 1)
            return f.read(1) == b"\n"

    # -- records

    def append_entry(self, entry: Entry) -> None:
        d = entry.to_dict()
        self._write({"t": "entry", "entry": d})
        self._where[entry.uuid] = list(self._last_at)
        self._known[entry.uuid] = _digest(d)
        i = self._pos.get(entry.uuid)
        if i is None:
            self._pos[entry.uuid] = len(self._working)
            self._working.append(entry)
        else:
            self._working[i] = entry

    def _set_working(self, entries: Sequence[Entry]) -> None:
        self._working = list(entries)
        self._pos = {e.uuid: i for i, e in enumerate(self._working)}

    def append_history(self, entries: Sequence[Entry]) -> None:
        """Record that the working history is now exactly `entries` (after a compaction)."""
        changed: dict[str, dict] = {}
        digests = {}
        for e in entries:
            d = e.to_dict()
            dg = _digest(d)
            if self._known.get(e.uuid) != dg:
                changed[e.uuid] = d
            digests[e.uuid] = dg
        self._write({"t": "history", "at": clock.now(), "uuids": [e.uuid for e in entries], "changed": changed})
        at = list(self._last_at)
        where = {}
        for e in entries:
            w = at if e.uuid in changed else self._where.get(e.uuid)
            if w is None:
                self._indexable = False
            else:
                where[e.uuid] = w
        self._where, self._history_at = where, at
        self._known = digests    # an entry that left the history is logged whole if it ever comes back
        self._set_working(entries)

    def sync(self, entries: Sequence[Entry]) -> None:
        """Log whatever it takes for the log's working history to equal `entries`: entry records
        when only new entries were added at the end, one history record otherwise."""
        w = self._working
        if len(entries) >= len(w) and all(a is b or self._same(a, b) for a, b in zip(w, entries)):
            for e in entries[len(w):]:
                self.append_entry(e)
        else:
            self.append_history(entries)

    def _same(self, a: Entry, b: Entry) -> bool:
        return a.uuid == b.uuid and self._known.get(b.uuid) == _digest(b.to_dict())

    def append_state(self, state: Mapping[str, Any]) -> None:
        """The state parts now, e.g. {"pipeline": PipelineState.to_dict(), "cost": CostTally.to_dict(),
        "permissions": {...}, "notes": "..."}; parts not named keep their value. Only what changed
        is written, as a `delta` record of operations (state_delta.py); the whole state, as a
        `state` record marked `all`, when it is the session's (or this run's) first and once the
        changes since the last whole copy add up to CHECKPOINT_EVERY times its size. A reader
        applies only the changes after the last whole copy."""
        ops: list[list[Any]] = []
        after = dict(self._state)
        for k, v in state.items():
            if k in ("t", "at", "all"):
                continue
            text = _dumps(v)
            new = json.loads(text)
            if k in self._state and self._state[k] == new and type(self._state[k]) is type(new):
                continue
            change = diff(self._state[k], new, (k,)) if k in self._state else []
            if not change or len(_dumps(change)) >= len(text):
                change = [["set", [k], new]]
            ops += change
            after[k] = new
        if not ops:
            return
        size = len(_dumps(ops))
        if self._since is None or self._since + size > CHECKPOINT_EVERY * self._full \
                or self._end() - self._checkpoint_end > CHECKPOINT_BYTES:
            rec = {"t": "state", "at": clock.now(), "all": True, **after}
            self._write(rec)
            self._full, self._since = len(_dumps(rec)), 0
        else:
            self._write({"t": "delta", "at": clock.now(), "ops": ops})
            self._since += size
        self._state = after

    def append_event(self, event: Mapping[str, Any] | Any) -> None:
        """An event dict (or an agent_core.events.Event)."""
        d = event.to_dict() if hasattr(event, "to_dict") else dict(event)
        self._write({"t": "event", "at": clock.now(), "event": d})
        kind = d.get("type")
        if not (isinstance(kind, str) and kind in UNINDEXED_EVENTS):
            self._events_at.append(list(self._last_at))   # resume keeps it (a compaction, a notice, ...)

    @property
    def working(self) -> list[Entry]:
        """The working history the log currently describes."""
        return list(self._working)

    # -- io

    def _scrub(self, line: str) -> str:
        line, n = scrub_counted(line)
        self.redactions += n
        return line

    def _write(self, rec: Mapping[str, Any]) -> None:
        if self._pending is not None:
            if rec.get("t") in ("meta", "state", "delta"):
                self._pending.append(rec)     # no content yet: nothing on disk
                return
            try:
                self._open_file(True)
            except (StateFolderError, FileExistsError) as e:
                # Nothing written and the records still pending: the next write tries again.
                raise SessionWriteError(str(e), getattr(e, "errno", None)) from e
            pending, self._pending = self._pending, None
            for r in pending:
                self._write(r)
        whole = rec.get("t") == "state" and rec.get("all") is True
        if whole and (index := self._index()) is not None:
            rec = {**rec, "index": index}
        line = self._scrub(_dumps(rec)) + "\n"
        self._write_raw(line.encode("utf-8"), fsync=rec.get("t") in FSYNC_RECORDS)
        if whole:
            self._checkpoint_end = self._last_at[0] + self._last_at[1]

    def _index(self) -> dict | None:
        """The checkpoint index for a whole state record about to be the log's next line: where the
        reader finds what it needs from before it (session_reader.SessionReplay._from_index), or
        None when this writer does not know it (a log it could not index, a failed write's half line)."""
        if not self._indexable or self._newline_owed or self._fd is None:
            return None
        entries: list[list[str | int]] = []
        for e in self._working:
            w = self._where.get(e.uuid)
            if w is None:
                return None
            entries.append([e.uuid, *w])
        return {"line": self._lines + 1, "entries": entries, "history": self._history_at, "events": self._events_at}

    def _end(self) -> int:
        return self._last_at[0] + self._last_at[1]

    def _write_raw(self, data: bytes, fsync: bool = False, line: bool = True) -> None:
        """Append `data` whole or not at all: a failed write (disk full) is cut back to where it
        started and raised as SessionWriteError, so the log never ends in half a record."""
        with self._lock:
            fd = self._fd
            if fd is None:
                raise ValueError(f"session log {self.path} is closed")
            owed = self._newline_owed
            if owed:
                data = b"\n" + data
                self._indexable = False     # a half line stays in the log: let the reader read it all
            start = os.lseek(fd, 0, os.SEEK_END)
            try:
                view = memoryview(data)
                while view:
                    n = os.write(fd, view)
                    view = view[n:]
                if fsync:
                    os.fsync(fd)
            except OSError as e:
                self._cut_back(fd, start)
                raise SessionWriteError.of(e, self.path) from e
            self._newline_owed = False
            if line:
                self._lines += 1 + owed
                self._last_at = [start + owed, len(data) - owed, self._lines]

    def _cut_back(self, fd: int, size: int) -> None:
        try:
            os.ftruncate(fd, size)
        except OSError:
            self._newline_owed = True   # the half line stays; it is skipped on load

    def close(self) -> None:
        """Flush, give up the session and close. Never raises for a failed flush: what was
        written is all there is. A lazy log that never had content stays unwritten."""
        with self._lock:
            if self._pending is not None:
                self._pending = None  # closed before any content: nothing was ever written
                return
            if self._fd is not None:
                try:
                    os.fsync(self._fd)
                except OSError:
                    pass
                finally:
                    self._release_lock()
                    os.close(self._fd)    # closing the last descriptor releases the flock
                    self._fd = None

    @property
    def closed(self) -> bool:
        return self._fd is None and self._pending is None

    def __enter__(self) -> "SessionLog":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:  # pragma: no cover - best effort
        try:
            self.close()
        except Exception:
            pass


__all__ = ["SessionLog", "SessionInUse", "SessionWriteError", "StateFolderError", "FORMAT_VERSION", "REDACTED",
           "DIR_MODE", "FILE_MODE"]
