"""Reading ctxtui's session logs: the one parser of their format (written by `session_log.SessionLog`).

Every reader of a ctxtui log goes through here: resume (`load_session`), a live view
(`SessionReplay.feed`), the session list and `ctxtui watch` (`parse_head`: the meta line and the
first prompt), the usage records (`agent_core.logs.ctxtui_log`, with `logged_entries` and
`logged_event`) and the transcript browser. The record kinds are described in session_log.py.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from compaction.entry import Entry

from agent_core.pricing.cost import usage_problem
from agent_core.pricing.tally import cost_state_problem
from agent_core.sessions.logged_entry import entry_problem
from agent_core.sessions.repair import repair_history

HEAD_LINES = 200     # the meta line is the first; the first prompt comes within a few lines


def decode_line(line: bytes | str) -> dict | None:
    """One log line as its record; None for a blank line. Raises ValueError (UnicodeDecodeError
    included) for a line that is not a JSON object, RecursionError for absurdly deep nesting."""
    if isinstance(line, bytes):
        line = line.decode("utf-8")
    if not line.strip():
        return None
    rec = json.loads(line)
    if not isinstance(rec, dict):
        raise ValueError("not an object")
    return rec


def logged_entries(rec: Mapping[str, Any]) -> list[dict]:
    """The entry dicts an `entry` or `history` record carries (for `history`: the new or changed
    ones); anything of the wrong shape is left out."""
    t = rec.get("t")
    if t == "entry":
        e = rec.get("entry")
        return [e] if isinstance(e, dict) else []
    if t == "history":
        changed = rec.get("changed")
        return [e for e in changed.values() if isinstance(e, dict)] if isinstance(changed, dict) else []
    return []


def logged_event(rec: Mapping[str, Any]) -> dict | None:
    """The event an `event` record carries, when it is an object."""
    ev = rec.get("event") if rec.get("t") == "event" else None
    return ev if isinstance(ev, dict) else None


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
    all_entries: list[Entry]         # every entry ever logged, once per uuid, in its first (original) form
    state: dict                      # merged state snapshots (pipeline, cost, permissions, notes, ...)
    events: list[dict]
    warnings: list[str]
    path: Path | None = None
    skipped: int = 0                 # unreadable lines, and impossible usage figures (dropped)
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
    "pipeline": ("an object with an object 'layers' of objects",
                 lambda v: isinstance(v, dict) and isinstance(v.get("layers", {}), dict)
                 and all(isinstance(x, dict) for x in v.get("layers", {}).values())),
    "cost": ("a cost book whose figures one session can reach",
             lambda v: cost_state_problem(v) is None),
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
            rec = decode_line(line)
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
            self.feed(rec, n)
        except Exception as e:  # a well-formed line with a broken record (RecursionError included)
            self.skipped += 1
            self._warn(f"line {n}: unreadable {rec.get('t', '?')!r} record ({type(e).__name__}: {str(e)[:200]}); "
                       "skipped")

    def _remember(self, e: Entry) -> None:
        self.latest[e.uuid] = e
        self.first.setdefault(e.uuid, e)

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

    def feed(self, rec: Mapping[str, Any], lineno: int | None = None) -> None:
        """Apply one record. Raises (ValueError and others) for a record that cannot be applied:
        `feed_line` then skips the line, and the state it left stays as it was."""
        t = rec.get("t")
        n = lineno or self.lines
        if t == "meta":
            self.meta = {k: v for k, v in rec.items() if k != "t"}
        elif t == "entry":
            e = self._entry(rec.get("entry"), n)
            self._remember(e)
            i = self._pos.get(e.uuid)
            if i is None:
                self._pos[e.uuid] = len(self.working)
                self.working.append(e)
            else:
                self.working[i] = e
        elif t == "history":
            self._history(rec, n)
        elif t == "state":
            self.state.update(self._checked_state(rec, n))
        elif t == "event":
            ev = rec.get("event")
            ev = dict(ev) if isinstance(ev, Mapping) else {"value": ev}
            if "usage" in ev and not self._usage_ok(ev["usage"], n, f"usage of a {str(ev.get('type'))[:40]} event"):
                ev.pop("usage")
            self.events.append(ev)
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
            self._remember(e)
        if bad is not None:
            raise ValueError(bad)
        found = [e for u in uuids if (e := new.get(u) or self.latest.get(u)) is not None]
        if uuids and not found:
            raise ValueError(f"it names {len(uuids)} entr{'y' if len(uuids) == 1 else 'ies'}, none of which "
                             "the log holds")
        for u in uuids:
            if u not in new and u not in self.latest:
                self._warn(f"history record names entry {u[:40]} that the log does not hold; left out", "history")
        self.working = found
        self._pos = {e.uuid: i for i, e in enumerate(found)}

    def _checked_state(self, rec: Mapping[str, Any], n: int) -> dict:
        """The record's state parts, less those of the wrong type (each one a warning)."""
        out = {}
        for k, v in rec.items():
            if k in ("t", "at"):
                continue
            check = STATE_CHECKS.get(k)
            if check is not None and not check[1](v):
                why = cost_state_problem(v) if k == "cost" else None
                self._warn(f"line {n}: state {k!r} must be {check[0]}, got {why or _short(v)}; ignored", "state")
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


# ---------------------------------------------------------------- head

@dataclass(frozen=True)
class SessionHead:
    meta: dict                 # the meta record ({} when missing); a `config` that is not a table is dropped
    title: str | None          # the first user prompt, shortened


def parse_head(head: bytes) -> SessionHead:
    """Meta and first user text from the first bytes of a log, without reading it all (a line cut
    off at the end of `head` is just not read)."""
    meta: dict = {}
    title = None
    for raw in head.split(b"\n")[:HEAD_LINES]:
        try:
            rec = decode_line(raw)
        except (ValueError, RecursionError):
            continue
        if rec is None:
            continue
        if rec.get("t") == "meta" and not meta:
            meta = rec
        elif rec.get("t") == "entry" and title is None:
            title = _title(rec)
        if meta and title:
            break
    if meta and not isinstance(meta.get("config", {}), dict):
        meta = {k: v for k, v in meta.items() if k != "config"}    # a damaged log must not break the thresholds
    return SessionHead(meta, title)


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
