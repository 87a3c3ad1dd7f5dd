"""The session log (DESIGN §7): `<home>/.ctxtui/sessions/<id>.jsonl`, append-only, one JSON object
per line, written with one `write` and flushed per line so a crash loses at most the line being
written; meta, history and state lines are also fsync'ed.

Records (`t` says which):
    {"t": "meta", "v": 1, "session_id", "created", "model", "workspace", "version", ...}   first line
    {"t": "entry", "entry": Entry.to_dict()}       a new entry at the end of the working history
                                                   (an entry whose uuid is already there replaces it in place)
    {"t": "history", "uuids": [...], "changed": {uuid: entry_dict}, "at"}
                                                   the working history was rewritten (compaction): it is now
                                                   exactly these uuids; entries that are new or whose content
                                                   changed are carried in `changed`, the rest are the latest
                                                   version already in the log
    {"t": "state", "at", ...}                      snapshot: pipeline, cost, permissions, notes (keys merge,
                                                   later ones win)
    {"t": "event", "at", "event": {...}}           events worth keeping (compaction, error, context, ...)

Replaying the records in order rebuilds the working history exactly (`load_session`). A line cut
off mid-way or otherwise unreadable, or a state part of the wrong type, is skipped with a warning,
never an exception. Loading also repairs what a crash or an old bug can leave behind, so the next
request is valid: a tool call with no result gets an "Interrupted" error result, a tool result
whose call is gone is dropped, and invalid Unicode is replaced. `SessionLog.open` logs the repair
and cuts away a cut-off last line.

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
import re
import stat
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from compaction.entry import Entry, tool_result_block
from compaction.scrub import REDACTED, count_secrets, register_secret, scrub
from compaction.transcript import DIR_MODE, FILE_MODE, ensure_private_dir

from agent_core.config import SECRET_ENV_VARS, ConfigError
from agent_core.sessions.paths import is_session_id, new_session_id, session_log_path, sessions_dir
from agent_core.sessions.valid_text import valid_entry

FORMAT_VERSION = 1
FSYNC_RECORDS = frozenset({"meta", "history", "state"})
INTERRUPTED_RESULT = ("Interrupted: ctxtui stopped before this tool finished (the run was killed or crashed), so "
                      "its outcome is unknown. Check its effects before running it again.")


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


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("ctxtui")
    except Exception:
        return "0.0.0+local"


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


# ---------------------------------------------------------------- reading

# Warning kinds, in the words of a one-line summary: (one, many).
WARNING_KINDS = {
    "line": ("unreadable line skipped", "unreadable lines skipped"),
    "state": ("state part of the wrong type ignored", "state parts of the wrong type ignored"),
    "history": ("entry named by a history record is missing", "entries named by history records are missing"),
    "meta": ("meta line missing", "meta lines missing"),
}
_OUTCOME = re.compile(r"; (skipped|ignored|left out)$")


@dataclass
class LoadedSession:
    meta: dict
    entries: list[Entry]             # the working history after the last whole line, repaired (see repair_history)
    all_entries: list[Entry]         # every entry ever logged, once per uuid, in its first (original) form
    state: dict                      # merged state snapshots (pipeline, cost, permissions, notes, ...)
    events: list[dict]
    warnings: list[str]
    path: Path | None = None
    skipped: int = 0                 # unreadable lines
    latest: dict[str, Entry] = field(default_factory=dict, repr=False)  # uuid -> newest version logged
    logged: list[Entry] = field(default_factory=list, repr=False)       # the working history as logged
    kinds: list[str] = field(default_factory=list, repr=False)          # the kind of each warning
    cut_tail: int = 0                # bytes of a cut-off last line (no newline, unreadable)

    @property
    def session_id(self) -> str | None:
        return self.meta.get("session_id") or (self.path.stem if self.path else None)

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


def _is_count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


# What each state part read at resume must look like; a part that does not is dropped (the
# loader's users then fall back to their defaults for it) instead of crashing the resume.
STATE_CHECKS: dict[str, tuple[str, Any]] = {
    "pipeline": ("an object with an object 'layers'",
                 lambda v: isinstance(v, dict) and isinstance(v.get("layers", {}), dict)),
    "cost": ("an object", lambda v: isinstance(v, dict)),
    "permissions": ("an object with a list of tool names 'always'",
                    lambda v: isinstance(v, dict) and isinstance(v.get("always", []), list)
                    and all(isinstance(t, str) for t in v.get("always", []))),
    "turns": ("a whole number", _is_count),
    "notes": ("text", lambda v: isinstance(v, str)),
}


def _short(v: Any) -> str:
    text = json.dumps(v, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


class SessionReplay:
    """Applies records one at a time; `load_session` uses it, and a live view can feed it the
    lines appended since it last looked."""

    def __init__(self) -> None:
        self.meta: dict = {}
        self.working: list[Entry] = []
        self._pos: dict[str, int] = {}            # uuid -> index in working
        self.latest: dict[str, Entry] = {}        # uuid -> newest version seen
        self.first: dict[str, Entry] = {}         # uuid -> first version seen (insertion order = first seen)
        self.state: dict = {}
        self.events: list[dict] = []
        self.warnings: list[str] = []
        self.kinds: list[str] = []
        self.skipped = 0
        self.lines = 0
        self.cut_tail = 0

    def _warn(self, msg: str, kind: str = "line") -> None:
        self.warnings.append(msg)
        self.kinds.append(kind)

    def feed_line(self, line: bytes | str, lineno: int | None = None, last: bool = False) -> None:
        """One line without its newline. `last` marks a final line with no newline (cut off)."""
        self.lines += 1
        n = lineno if lineno is not None else self.lines
        size = len(line) if isinstance(line, bytes) else len(line.encode("utf-8", "surrogatepass"))
        try:
            if isinstance(line, bytes):
                line = line.decode("utf-8")
            if not line.strip():
                return
            rec = json.loads(line)
            if not isinstance(rec, dict):
                raise ValueError("not an object")
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
            self.feed(rec, n)
        except Exception as e:  # a well-formed line with a broken record (RecursionError included)
            self.skipped += 1
            self._warn(f"line {n}: unreadable {rec.get('t', '?')!r} record ({type(e).__name__}: {str(e)[:200]}); "
                       "skipped")

    def _remember(self, e: Entry) -> None:
        self.latest[e.uuid] = e
        self.first.setdefault(e.uuid, e)

    def feed(self, rec: Mapping[str, Any], lineno: int | None = None) -> None:
        t = rec.get("t")
        if t == "meta":
            self.meta = {k: v for k, v in rec.items() if k != "t"}
        elif t == "entry":
            e = Entry.from_dict(rec["entry"])
            self._remember(e)
            i = self._pos.get(e.uuid)
            if i is None:
                self._pos[e.uuid] = len(self.working)
                self.working.append(e)
            else:
                self.working[i] = e
        elif t == "history":
            changed = rec.get("changed") or {}
            new = {u: Entry.from_dict(d) for u, d in changed.items()}
            working = []
            for u in rec["uuids"]:
                e = new.get(u) or self.latest.get(u)
                if e is None:
                    self._warn(f"history record names entry {u} that the log does not hold; left out", "history")
                    continue
                working.append(e)
            for e in new.values():
                self._remember(e)
            self.working = working
            self._pos = {e.uuid: i for i, e in enumerate(working)}
        elif t == "state":
            self.state.update(self._checked_state(rec, lineno or self.lines))
        elif t == "event":
            ev = rec.get("event")
            self.events.append(dict(ev) if isinstance(ev, Mapping) else {"value": ev})
        else:
            raise ValueError(f"unknown record type {t!r}")

    def _checked_state(self, rec: Mapping[str, Any], n: int) -> dict:
        """The record's state parts, less those of the wrong type (each one a warning)."""
        out = {}
        for k, v in rec.items():
            if k in ("t", "at"):
                continue
            check = STATE_CHECKS.get(k)
            if check is not None and not check[1](v):
                self._warn(f"line {n}: state {k!r} must be {check[0]}, got {_short(v)}; ignored", "state")
                continue
            out[k] = v
        return out

    def result(self, path: Path | None = None, *, repair: bool = True) -> LoadedSession:
        """What was read; with `repair`, `entries` is the working history made valid to send
        (`repair_history`), each repair a warning."""
        working = list(self.working)
        warnings, kinds = list(self.warnings), list(self.kinds)
        entries = working
        if repair:
            entries, notes = repair_history(working)
            warnings += notes
            kinds += ["repair"] * len(notes)
        return LoadedSession(meta=dict(self.meta), entries=entries, all_entries=list(self.first.values()),
                             state=dict(self.state), events=list(self.events), warnings=warnings,
                             path=path, skipped=self.skipped, latest=dict(self.latest), logged=working,
                             kinds=kinds, cut_tail=self.cut_tail)


# ---------------------------------------------------------------- repair

def _tool_use_ids(e: Entry) -> list[str]:
    return [b["id"] for b in e.content if isinstance(b, dict) and b.get("type") == "tool_use"
            and isinstance(b.get("id"), str)]


def _is_result(b: Any) -> bool:
    return isinstance(b, dict) and b.get("type") == "tool_result"


def _interrupted_entry(ids: list[str]) -> Entry:
    return Entry({"role": "user", "content": [tool_result_block(i, INTERRUPTED_RESULT, is_error=True) for i in ids]},
                 meta={"repaired": "interrupted"})


def repair_history(entries: Sequence[Entry]) -> tuple[list[Entry], list[str]]:
    """The history made valid to send, and a note per repair. A run killed during a tool leaves
    its call without a result (the API then refuses every request with HTTP 400): each such call
    is answered with an "Interrupted" error result, as a cancel does. A tool result whose call is
    gone (a damaged log) is dropped, and invalid Unicode is replaced. Sent entries of one role are
    one API message (see `compaction.project`), so calls and results are matched per message."""
    notes: list[str] = []
    fixed = [valid_entry(e) for e in entries]
    n_text = sum(a is not b for a, b in zip(fixed, entries))
    if n_text:
        notes.append(f"{n_text} entr{'y' if n_text == 1 else 'ies'} held text that is not valid Unicode; "
                     "replaced with U+FFFD")
    out: list[Entry] = []
    calls: list[str] = []        # tool_use ids of the assistant message being answered
    answered: set[str] = set()
    insert_at = 0                # where that message's missing results go (right after it)
    role = None                  # role of the last sent entry
    interrupted = dropped = 0

    def answer_missing() -> None:
        nonlocal interrupted
        missing = [i for i in calls if i not in answered]
        if missing:
            out.insert(insert_at, _interrupted_entry(missing))
            interrupted += len(missing)

    for e in fixed:
        if not e.sent:
            out.append(e)
            continue
        if e.role == "assistant":
            if role != "assistant":
                answer_missing()
                calls, answered = [], set()
            calls += _tool_use_ids(e)
            out.append(e)
            insert_at = len(out)
        else:
            keep = []
            for b in e.content:
                if _is_result(b):
                    uid = b.get("tool_use_id")
                    if uid not in calls or uid in answered:
                        continue
                    answered.add(uid)
                keep.append(b)
            dropped += len(e.content) - len(keep)
            if keep:
                out.append(e if len(keep) == len(e.content) else e.with_content(keep))
        role = e.role
    answer_missing()
    if interrupted:
        notes.append(f"{interrupted} tool call{'s' if interrupted != 1 else ''} left without a result (the run "
                     "stopped during the tool) answered as interrupted")
    if dropped:
        notes.append(f"{dropped} tool result{'s' if dropped != 1 else ''} whose call is not in the history dropped")
    return out, notes


def load_session(path: Path, *, repair: bool = True) -> LoadedSession:
    """Replay a session log. Unreadable lines are skipped and counted in `warnings`/`skipped`;
    with `repair` (the default) the history is made valid to send (`repair_history`)."""
    path = Path(path)
    data = path.read_bytes()
    replay = SessionReplay()
    lines = data.split(b"\n")
    cut = lines[-1] != b""       # no newline at the end: the final line may be incomplete
    if not cut:
        lines.pop()
    for i, line in enumerate(lines, 1):
        replay.feed_line(line, i, last=cut and i == len(lines))
    if not replay.meta:
        replay.warnings.insert(0, "no meta line: the log's first line is missing or unreadable")
        replay.kinds.insert(0, "meta")
    return replay.result(path, repair=repair)


# ---------------------------------------------------------------- listing

@dataclass
class SessionInfo:
    session_id: str
    path: Path
    created: str | None              # from the meta line (ISO 8601, UTC)
    modified: float                  # file mtime
    size: int
    model: str | None = None
    workspace: str | None = None
    title: str | None = None         # the first user prompt, shortened


def _peek(path: Path, limit: int = 65_536) -> tuple[dict, str | None]:
    """Meta and first user text from the head of a log, without reading it all."""
    meta: dict = {}
    title = None
    try:
        with open(path, "rb") as f:
            head = f.read(limit)
    except OSError:
        return meta, title
    for raw in head.split(b"\n")[:200]:
        try:
            rec = json.loads(raw)
        except (ValueError, RecursionError):
            continue
        if not isinstance(rec, dict):
            continue
        if rec.get("t") == "meta" and not meta:
            meta = rec
        elif rec.get("t") == "entry" and title is None:
            title = _title(rec)
        if meta and title:
            break
    return meta, title


def _title(rec: dict) -> str | None:
    """The first user text of an entry record, shortened; None when it has none (or is odd)."""
    try:
        e = rec.get("entry") or {}
        msg = e.get("message") or {}
        if msg.get("role") != "user" or e.get("kind", "message") != "message":
            return None
        content = msg.get("content")
        text = content if isinstance(content, str) else " ".join(
            str(b.get("text", "")) for b in content or [] if isinstance(b, dict) and b.get("type") == "text")
    except (AttributeError, TypeError):
        return None
    return " ".join(text.split())[:80] or None


def _text(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def list_sessions(home: Path) -> list[SessionInfo]:
    """Every session log under `home`, most recently written first."""
    folder = sessions_dir(home)
    if not folder.is_dir():
        return []
    out = []
    for p in folder.glob("*.jsonl"):
        if not is_session_id(p.stem):
            continue
        try:
            st = p.stat()
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode):   # a FIFO or a device named *.jsonl would block or never end
            continue
        meta, title = _peek(p)
        out.append(SessionInfo(session_id=p.stem, path=p, created=_text(meta.get("created")), modified=st.st_mtime,
                               size=st.st_size, model=_text(meta.get("model")),
                               workspace=_text(meta.get("workspace")), title=title))
    out.sort(key=lambda s: (s.modified, s.session_id), reverse=True)
    return out


def latest_session(home: Path) -> SessionInfo | None:
    """The session `--continue` resumes: the one written most recently."""
    sessions = list_sessions(home)
    return sessions[0] if sessions else None


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

    def __init__(self, path: Path, session_id: str, secrets: Iterable[str] = (), *, new: bool = False) -> None:
        self.path = Path(path)
        self.session_id = session_id
        register_secret(*secrets, *(os.environ.get(k) for k in SECRET_ENV_VARS))
        self._known: dict[str, bytes] = {}     # uuid -> digest of the newest version in the log
        self._working: list[Entry] = []        # the working history as the log describes it
        self._pos: dict[str, int] = {}         # uuid -> index in _working
        self._lock = threading.Lock()
        self.redactions = 0
        self.loaded: LoadedSession | None = None
        ensure_private_dir(self.path.parent.parent)   # the workspace's state folder
        ensure_private_dir(self.path.parent)          # .../sessions
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | (os.O_EXCL if new else 0)
        try:
            fd = os.open(self.path, flags, FILE_MODE)
        except FileExistsError:
            raise FileExistsError(f"session {session_id} already exists at {self.path}") from None
        os.fchmod(fd, FILE_MODE)
        self._fd: int | None = fd
        self._newline_owed = False             # a failed write could not be cut back: start the next on a new line
        try:
            self._take_lock()
        except BaseException:
            os.close(fd)
            self._fd = None
            raise

    # -- one writer

    @property
    def pid_path(self) -> Path:
        """Where the writer's pid is kept while it holds the session (for the in-use message)."""
        return self.path.with_suffix(".pid")

    def _take_lock(self) -> None:
        """Hold the session for this writer's life: a second writer would interleave its history
        with ours. The lock goes with the process, so a killed run never leaves the session locked."""
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
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
               session_id: str | None = None, now: float | None = None) -> "SessionLog":
        """Start a new session log and write its meta line."""
        now = time.time() if now is None else now
        sid = session_id or new_session_id(now)
        log = cls(session_log_path(Path(home), sid), sid, secrets, new=True)
        rec = {"t": "meta", "v": FORMAT_VERSION, "session_id": sid,
               "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)), "version": _version(),
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
        # The writer's view must match what a reader rebuilds: the newest version of every uuid.
        self._known = {u: _digest(e.to_dict()) for u, e in loaded.latest.items()}
        size = os.fstat(self._fd).st_size
        if loaded.cut_tail:
            os.ftruncate(self._fd, size - loaded.cut_tail)   # the line the crash cut off: never whole
        elif size and not self._last_byte_is_newline(size):
            self._write_raw(b"\n")    # a whole record that only lost its newline
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
        self._write({"t": "history", "at": time.time(), "uuids": [e.uuid for e in entries], "changed": changed})
        self._known.update(digests)
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
        """A snapshot, e.g. {"pipeline": PipelineState.to_dict(), "cost": CostTally.to_dict(),
        "permissions": {...}, "notes": "..."}; keys merge over earlier snapshots on load."""
        self._write({"t": "state", "at": time.time(), **{k: v for k, v in state.items() if k not in ("t", "at")}})

    def append_event(self, event: Mapping[str, Any] | Any) -> None:
        """An event dict (or an agent_core.events.Event)."""
        d = event.to_dict() if hasattr(event, "to_dict") else dict(event)
        self._write({"t": "event", "at": time.time(), "event": d})

    @property
    def working(self) -> list[Entry]:
        """The working history the log currently describes."""
        return list(self._working)

    # -- io

    def _scrub(self, line: str) -> str:
        if (n := count_secrets(line)):
            self.redactions += n
            line = scrub(line)
        return line

    def _write(self, rec: Mapping[str, Any]) -> None:
        line = self._scrub(_dumps(rec)) + "\n"
        self._write_raw(line.encode("utf-8"), fsync=rec.get("t") in FSYNC_RECORDS)

    def _write_raw(self, data: bytes, fsync: bool = False) -> None:
        """Append `data` whole or not at all: a failed write (disk full) is cut back to where it
        started and raised as SessionWriteError, so the log never ends in half a record."""
        with self._lock:
            if self._fd is None:
                raise ValueError(f"session log {self.path} is closed")
            if self._newline_owed:
                data = b"\n" + data
            start = os.lseek(self._fd, 0, os.SEEK_END)
            try:
                view = memoryview(data)
                while view:
                    n = os.write(self._fd, view)
                    view = view[n:]
                if fsync:
                    os.fsync(self._fd)
            except OSError as e:
                self._cut_back(start)
                raise SessionWriteError.of(e, self.path) from e
            self._newline_owed = False

    def _cut_back(self, size: int) -> None:
        try:
            os.ftruncate(self._fd, size)
        except OSError:
            self._newline_owed = True   # the half line stays; it is skipped on load

    def close(self) -> None:
        """Flush, give up the session and close. Never raises for a failed flush: what was
        written is all there is."""
        with self._lock:
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
        return self._fd is None

    def __enter__(self) -> "SessionLog":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:  # pragma: no cover - best effort
        try:
            self.close()
        except Exception:
            pass


__all__ = ["SessionLog", "LoadedSession", "SessionInfo", "SessionReplay", "SessionInUse", "SessionWriteError",
           "load_session", "list_sessions", "latest_session", "repair_history", "FORMAT_VERSION", "REDACTED",
           "INTERRUPTED_RESULT", "DIR_MODE", "FILE_MODE"]
