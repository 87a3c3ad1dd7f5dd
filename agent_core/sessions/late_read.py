"""What `SessionReplay.read` can tell from a log line's first bytes, to decode it late or never.

A long session's log is mostly entries that left the history long before its end, state changes
that a later whole copy makes moot, and per-call events a resume has no use for. Decoding all of
it made a resume cost the file's size in time; the writer's own layout (session_log._dumps:
compact separators, the record type first, an entry's uuid first) lets the reader see what a line
is without decoding it. A line of another layout (written by hand, or by some other tool) is just
decoded at once, as any line was before.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

from compaction.entry import Entry

ENTRY_HEAD = b'{"t":"entry","entry":{"uuid":"'
HISTORY_HEAD, UUIDS, CHANGED, CARRIED = b'{"t":"history","at":', b',"uuids":[', b'],"changed":{', b'":{"uuid":"'
EVENT_HEAD, EVENT_TYPE = b'{"t":"event",', b'"event":{"type":"'
DELTA_HEAD, STATE_HEAD, WHOLE = b'{"t":"delta",', b'{"t":"state",', b',"all":true,'
# Per-call events resume has no use for (the transcript browser and the usage readers read the log
# themselves): passed over, they are most of a long session's events.
UNREAD_EVENTS = frozenset({b"tool_call", b"tool_result", b"assistant_done", b"turn_finished"})


@dataclass(eq=False)
class LoggedLine:
    """A line kept to be decoded if it is still needed; decoded once (`rec`: None until then,
    False when it could not be)."""
    raw: bytes
    lineno: int
    rec: dict | Literal[False] | None = None
    off: int = -1              # where the line starts in the file (-1: not known)


@dataclass(eq=False)
class Unread:
    """An entry not read yet: from an entry record, or from the `changed` of a history record
    (`in_history`). It is read once the whole log is, if the history still holds it; one that
    cannot be read gives way to `prev`, the version it replaced (None: it is left out)."""
    uuid: str
    line: LoggedLine
    prev: Entry | Unread | None = None
    in_history: bool = False


def entry_uuid(raw: bytes) -> str | None:
    """The uuid of a compact entry record, or None (then the line is decoded at once)."""
    if not raw.startswith(ENTRY_HEAD):
        return None
    end = raw.find(b'"', len(ENTRY_HEAD), len(ENTRY_HEAD) + 200)
    uuid = raw[len(ENTRY_HEAD):end]
    if end < 0 or not uuid or b"\\" in uuid or not uuid.isascii():
        return None
    return uuid.decode()


def event_type(raw: bytes) -> bytes | None:
    """The type of a compact event record, from its first bytes (None: not found there)."""
    at = raw.find(EVENT_TYPE, 0, 120) + len(EVENT_TYPE)
    return raw[at:raw.find(b'"', at, at + 40)] if at >= len(EVENT_TYPE) else None


def unread_event(raw: bytes) -> bool:
    """Whether the line is an event of a kind resume does not read."""
    return event_type(raw) in UNREAD_EVENTS


def whole_state(raw: bytes) -> bool:
    return raw.startswith(STATE_HEAD) and raw.find(WHOLE, 0, 60) > 0


def history_uuids(raw: bytes) -> list[str] | None:
    """The uuids a compact history record names, read without its entries; None when the line
    does not look whole (the record is then decoded at once, and skipped if it is broken)."""
    if not raw.startswith(HISTORY_HEAD) or not raw.endswith(b"}}\n"):
        return None
    i = raw.find(UUIDS, 0, 60)
    j = raw.find(CHANGED, i) if i > 0 else -1
    if j < 0:
        return None
    try:
        uuids = json.loads(raw[i + len(UUIDS) - 1:j + 1])
    except ValueError:
        return None
    if not all(isinstance(u, str) and u and '"' not in u and "\\" not in u for u in uuids) \
            or len(set(uuids)) != len(uuids):
        return None
    return uuids


def carried(raw: bytes) -> set[str]:
    """The uuids a compact history record carries in its `changed`: each key followed by its
    entry's first field, the same uuid (a pair no text inside the record can hold: quotes in text
    are escaped). A hint only: an entry is taken from the decoded record when it is read."""
    out: set[str] = set()
    start = raw.find(CHANGED)
    k = raw.find(CARRIED, start)
    while start > 0 and k > 0:
        key = raw[raw.rfind(b'"', start, k) + 1:k]
        v = k + len(CARRIED)
        if raw[v:v + len(key) + 1] == key + b'"' and key.isascii():
            out.add(key.decode())
        k = raw.find(CARRIED, v)
    return out
