"""A ctxtui session log's lines as records, and what the records carry.

The smallest part of the format's one reader (session_reader.py): the line decoder every reader
uses, and the entries and events a record carries, for the readers of the usage records and the
transcripts (agent_core/logs), which need no replay. The record kinds are described in session_log.py.
"""
from __future__ import annotations

import json
from typing import Any, Mapping


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
