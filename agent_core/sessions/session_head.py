"""The head of a ctxtui session log: its meta line and first prompt, without reading it all.

For the session list and `ctxtui watch`, which look at many logs and need only their first lines:
this module loads no replay (session_reader.py) for it.
"""
from __future__ import annotations

from dataclasses import dataclass

from agent_core.sessions.log_records import decode_line

HEAD_LINES = 200     # the meta line is the first; the first prompt comes within a few lines


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
