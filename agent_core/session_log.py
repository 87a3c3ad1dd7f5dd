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
off mid-way or otherwise unreadable is skipped with a warning, never an exception.

No secret is ever written: every line is checked for the secret values handed in (and the API
key in the environment) and each occurrence is replaced by `[REDACTED]` before it reaches disk.
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from compaction.entry import Entry
from compaction.transcript import DIR_MODE, FILE_MODE, ensure_private_dir

from .paths import is_session_id, new_session_id, session_log_path, sessions_dir

FORMAT_VERSION = 1
REDACTED = "[REDACTED]"
SECRET_ENV_VARS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
MIN_SECRET_LEN = 8          # shorter values are too likely to occur by chance to be scrubbed
FSYNC_RECORDS = frozenset({"meta", "history", "state"})


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

@dataclass
class LoadedSession:
    meta: dict
    entries: list[Entry]             # the working history, as it was after the last whole line
    all_entries: list[Entry]         # every entry ever logged, once per uuid, in its first (original) form
    state: dict                      # merged state snapshots (pipeline, cost, permissions, notes, ...)
    events: list[dict]
    warnings: list[str]
    path: Path | None = None
    skipped: int = 0                 # unreadable lines
    latest: dict[str, Entry] = field(default_factory=dict, repr=False)  # uuid -> newest version logged

    @property
    def session_id(self) -> str | None:
        return self.meta.get("session_id") or (self.path.stem if self.path else None)


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
        self.skipped = 0
        self.lines = 0

    def _warn(self, msg: str) -> None:
        self.warnings.append(msg)

    def feed_line(self, line: bytes | str, lineno: int | None = None, last: bool = False) -> None:
        """One line without its newline. `last` marks a final line with no newline (cut off)."""
        self.lines += 1
        n = lineno if lineno is not None else self.lines
        if isinstance(line, bytes):
            try:
                line = line.decode("utf-8")
            except UnicodeDecodeError:
                self.skipped += 1
                self._warn(f"line {n}: not UTF-8 text; skipped")
                return
        if not line.strip():
            return
        try:
            rec = json.loads(line)
            if not isinstance(rec, dict):
                raise ValueError("not an object")
        except ValueError:
            self.skipped += 1
            if last:
                self._warn(f"line {n}: cut off mid-way (the session stopped while writing it); skipped")
            else:
                self._warn(f"line {n}: not valid JSON; skipped")
            return
        try:
            self.feed(rec)
        except Exception as e:  # a well-formed line with a broken record
            self.skipped += 1
            self._warn(f"line {n}: unreadable {rec.get('t', '?')!r} record ({type(e).__name__}: {e}); skipped")

    def _remember(self, e: Entry) -> None:
        self.latest[e.uuid] = e
        self.first.setdefault(e.uuid, e)

    def feed(self, rec: Mapping[str, Any]) -> None:
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
                    self._warn(f"history record names entry {u} that the log does not hold; left out")
                    continue
                working.append(e)
            for e in new.values():
                self._remember(e)
            self.working = working
            self._pos = {e.uuid: i for i, e in enumerate(working)}
        elif t == "state":
            self.state.update({k: v for k, v in rec.items() if k not in ("t", "at")})
        elif t == "event":
            ev = rec.get("event")
            self.events.append(dict(ev) if isinstance(ev, Mapping) else {"value": ev})
        else:
            raise ValueError(f"unknown record type {t!r}")

    def result(self, path: Path | None = None) -> LoadedSession:
        return LoadedSession(meta=dict(self.meta), entries=list(self.working), all_entries=list(self.first.values()),
                             state=dict(self.state), events=list(self.events), warnings=list(self.warnings),
                             path=path, skipped=self.skipped, latest=dict(self.latest))


def load_session(path: Path) -> LoadedSession:
    """Replay a session log. Unreadable lines are skipped and counted in `warnings`/`skipped`."""
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
    return replay.result(path)


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
        except ValueError:
            continue
        if not isinstance(rec, dict):
            continue
        if rec.get("t") == "meta" and not meta:
            meta = rec
        elif rec.get("t") == "entry" and title is None:
            e = rec.get("entry") or {}
            msg = e.get("message") or {}
            if msg.get("role") == "user" and e.get("kind", "message") == "message":
                content = msg.get("content")
                text = content if isinstance(content, str) else " ".join(
                    b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text")
                if text.strip():
                    title = " ".join(text.split())[:80]
        if meta and title:
            break
    return meta, title


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
        meta, title = _peek(p)
        out.append(SessionInfo(session_id=p.stem, path=p, created=meta.get("created"), modified=st.st_mtime,
                               size=st.st_size, model=meta.get("model"), workspace=meta.get("workspace"),
                               title=title))
    out.sort(key=lambda s: (s.modified, s.session_id), reverse=True)
    return out


def latest_session(home: Path) -> SessionInfo | None:
    """The session `--continue` resumes: the one written most recently."""
    sessions = list_sessions(home)
    return sessions[0] if sessions else None


# ---------------------------------------------------------------- writing

def _env_secrets() -> list[str]:
    return [v for k in SECRET_ENV_VARS if (v := os.environ.get(k, "").strip())]


class SessionLog:
    """The writer. Create one with `SessionLog.create` (new session) or `SessionLog.open` (resume);
    `open` also gives the replayed session as `.loaded`."""

    def __init__(self, path: Path, session_id: str, secrets: Iterable[str] = (), *, new: bool = False) -> None:
        self.path = Path(path)
        self.session_id = session_id
        self._secrets = sorted({s for s in [*secrets, *_env_secrets()] if s and len(s) >= MIN_SECRET_LEN},
                               key=len, reverse=True)
        self._known: dict[str, bytes] = {}     # uuid -> digest of the newest version in the log
        self._working: list[Entry] = []        # the working history as the log describes it
        self._pos: dict[str, int] = {}         # uuid -> index in _working
        self._lock = threading.Lock()
        self.redactions = 0
        self.loaded: LoadedSession | None = None
        ensure_private_dir(self.path.parent.parent)   # <home>/.ctxtui
        ensure_private_dir(self.path.parent)          # <home>/.ctxtui/sessions
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | (os.O_EXCL if new else 0)
        try:
            fd = os.open(self.path, flags, FILE_MODE)
        except FileExistsError:
            raise FileExistsError(f"session {session_id} already exists at {self.path}") from None
        os.fchmod(fd, FILE_MODE)
        self._fd: int | None = fd

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
    def open(cls, home: Path, session_id: str, *, secrets: Iterable[str] = ()) -> "SessionLog":
        """Reopen an existing session for appending (resume). Raises FileNotFoundError with the
        path when there is no such session."""
        path = session_log_path(Path(home), session_id)
        if not path.is_file():
            raise FileNotFoundError(f"no session {session_id!r} (looked for {path})")
        loaded = load_session(path)
        log = cls(path, session_id, secrets)
        log.loaded = loaded
        log._set_working(loaded.entries)
        # The writer's view must match what a reader rebuilds: the newest version of every uuid.
        log._known = {u: _digest(e.to_dict()) for u, e in loaded.latest.items()}
        if path.stat().st_size and not path.read_bytes()[-1:] == b"\n":
            log._write_raw(b"\n")     # close a cut-off line so the next record starts on its own
        return log

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
        """A snapshot, e.g. {"pipeline": PipelineState.to_dict(), "cost": CostTracker.to_dict(),
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
        for s in self._secrets:
            for form in {s, json.dumps(s, ensure_ascii=False)[1:-1], json.dumps(s)[1:-1]}:
                if form in line:
                    self.redactions += line.count(form)
                    line = line.replace(form, REDACTED)
        return line

    def _write(self, rec: Mapping[str, Any]) -> None:
        line = self._scrub(_dumps(rec)) + "\n"
        self._write_raw(line.encode("utf-8"), fsync=rec.get("t") in FSYNC_RECORDS)

    def _write_raw(self, data: bytes, fsync: bool = False) -> None:
        with self._lock:
            if self._fd is None:
                raise ValueError(f"session log {self.path} is closed")
            view = memoryview(data)
            while view:
                n = os.write(self._fd, view)
                view = view[n:]
            if fsync:
                os.fsync(self._fd)

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                try:
                    os.fsync(self._fd)
                finally:
                    os.close(self._fd)
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


__all__ = ["SessionLog", "LoadedSession", "SessionInfo", "SessionReplay", "load_session", "list_sessions",
           "latest_session", "FORMAT_VERSION", "REDACTED", "DIR_MODE", "FILE_MODE"]
