"""Reading session logs for the transcript browser, without Textual.

Three kinds of file are shown (`agent_core.logs.discover.list_logs` finds them): ctxtui session
logs, ctxtui compaction transcripts (whole entries, one per line) and Claude Code logs (read,
never written). Each line becomes one `Record` with a kind the viewer can filter on and a flag
for compaction boundaries; what a record of each format means comes from that format's reader
(`agent_core.sessions.log_records`, `agent_core.logs.claude_code`).
"""
from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Callable, Iterator

from agent_core.logs import MAX_LINE_BYTES, LogFollower
from agent_core.logs.claude_code import compact_metadata, is_compact_boundary, is_compact_summary
from agent_core.sessions.log_records import logged_entries, logged_event

from agent_core.logs.record_text import (delta_summary, event_summary, meta_summary, other_summary, pretty_text,
                                         state_summary, tool_input_text)

KINDS = ("user", "assistant", "tool", "thinking", "summary", "compaction", "other")
FILTERS = ("all",) + KINDS    # the viewer's kind filter, in the order `f` cycles through them
DETAIL_CHARS = 4000           # of a record's text in the detail pane; the rest is counted


def is_log_path(path: str) -> bool:
    return path.endswith(".jsonl")


@dataclass
class Record:
    line: int            # 1-based line number in the file
    kind: str            # one of KINDS
    role: str
    time: str            # as written in the file, shortened; "" when absent
    summary: str         # one line for the list
    text: str            # full text for the detail view and search
    boundary: bool = False

    @property
    def lower(self) -> str:
        return self.text.lower()

    def passes(self, kind_filter: str) -> bool:
        """Whether the kind filter keeps it: "all", its kind, or "compaction" for any boundary."""
        return kind_filter == "all" or self.kind == kind_filter or (kind_filter == "compaction" and self.boundary)

    def matches(self, query: str) -> bool:
        """Whether a search finds it: `query`, lower case, is in its text (case ignored)."""
        return query in self.lower

    def detail(self) -> str:
        """Its text for the detail pane: the first DETAIL_CHARS, and how many more there are."""
        if len(self.text) <= DETAIL_CHARS:
            return self.text
        return self.text[:DETAIL_CHARS] + f"\n… {len(self.text) - DETAIL_CHARS:,} more characters"


def next_filter(kind_filter: str) -> str:
    """The filter after `kind_filter` in FILTERS (after the last: "all" again)."""
    return FILTERS[(FILTERS.index(kind_filter) + 1) % len(FILTERS)]


def _block_text(b: dict) -> tuple[str, str]:
    """(kind, text) of one content block."""
    t = b.get("type")
    if t == "text":
        return "", b.get("text", "")
    if t == "thinking":
        return "thinking", b.get("thinking", "")
    if t == "tool_use":
        return "tool", f"{b.get('name', '?')} {tool_input_text(b.get('input'))}"
    if t == "tool_result":
        c = b.get("content", "")
        if isinstance(c, list):
            c = "\n".join(x.get("text", "") for x in c if isinstance(x, dict))
        return "tool", f"result {'(error) ' if b.get('is_error') else ''}{c}"
    return "other", json.dumps(b, ensure_ascii=False)[:2000]


def _message_record(line: int, message: dict, kind_hint: str, time_text: str) -> Record:
    role = message.get("role", "")
    content = message.get("content", "")
    if isinstance(content, str):
        blocks = [{"type": "text", "text": content}]
    else:
        blocks = [b for b in content if isinstance(b, dict)]
    kinds, texts = [], []
    for b in blocks:
        k, t = _block_text(b)
        kinds.append(k)
        texts.append(t)
    text = "\n".join(t for t in texts if t)
    if kind_hint:
        kind = kind_hint
    elif "tool" in kinds:
        kind = "tool"
    elif kinds and all(k == "thinking" for k in kinds):
        kind = "thinking"
    else:
        kind = role if role in ("user", "assistant") else "other"
    return Record(line, kind, role, time_text, " ".join(text.split())[:300], text)


def _time_text(v: object) -> str:
    if isinstance(v, (int, float)):
        return datetime.fromtimestamp(v).strftime("%H:%M:%S")
    if isinstance(v, str):
        return v[11:19] if len(v) >= 19 else v
    return ""


def _unreadable(line_no: int, raw: str) -> Record:
    return Record(line_no, "other", "", "", "unreadable line: " + raw[:200], raw[:2000])


def parse_line(line_no: int, raw: str) -> Record | None:
    """One JSONL line of any supported log as a Record; None for blank lines. A line that is not
    JSON (a log cut mid-write), or JSON of a shape no log has (fields of the wrong type, nesting
    too deep to walk), becomes an `other` record instead of stopping the load."""
    raw = raw.strip()
    if not raw:
        return None
    try:
        return _parse_line(line_no, raw)
    except (ValueError, RecursionError, TypeError, AttributeError, KeyError):
        return _unreadable(line_no, raw)


def _parse_line(line_no: int, raw: str) -> Record | None:
    try:
        obj = json.loads(raw)
    except ValueError:
        return _unreadable(line_no, raw)
    if not isinstance(obj, dict):
        return Record(line_no, "other", "", "", raw[:300], raw[:2000])
    t = _time_text(obj.get("timestamp") if "timestamp" in obj else obj.get("at"))
    rec_t = obj.get("t")   # ctxtui session log record type
    if rec_t == "event" and (event := logged_event(obj)) is not None:
        obj = event
    elif rec_t == "history":
        n = len(obj.get("uuids") or [])
        changed = obj.get("changed")
        changed = changed if isinstance(changed, dict) else {}
        return Record(line_no, "compaction", "", t, f"history rewritten: now {n} entries "
                      f"({len(changed)} new or changed)",
                      f"the working history is now {n} entries; new or changed:\n" + pretty_text(changed))
    elif rec_t == "meta":
        return Record(line_no, "other", "", t, meta_summary(obj), pretty_text(obj))
    elif rec_t == "state":
        return Record(line_no, "other", "", t, state_summary(obj), pretty_text(obj))
    elif rec_t == "delta":
        return Record(line_no, "other", "", t, delta_summary(obj), pretty_text(obj))
    typ = obj.get("type")
    if is_compact_boundary(obj):      # Claude Code
        meta = compact_metadata(obj)
        s = f"compaction ({meta.get('trigger', '?')}) — {meta.get('preTokens', '?')} tokens before"
        return Record(line_no, "compaction", "system", t, s, json.dumps(obj, ensure_ascii=False), boundary=True)
    # ctxtui compaction event in a session log
    if typ == "compaction":
        s = (f"compaction {obj.get('layer', '?')} ({obj.get('trigger', '?')}) "
             f"{obj.get('tokens_before', '?')} → {obj.get('tokens_after', '?')} tokens")
        return Record(line_no, "compaction", "", t, s, pretty_text(obj), boundary=True)
    if rec_t == "event" and isinstance(typ, str):
        kind, s = event_summary(obj)
        return Record(line_no, kind, "", t, s, pretty_text(obj))
    # an entry: a ctxtui `entry` record, a bare one (a transcript line) or a Claude Code message
    wrapped = logged_entries(obj) if rec_t == "entry" else []
    entry = wrapped[0] if wrapped else obj
    entry_kind = entry.get("kind")
    message = entry.get("message")
    if isinstance(message, dict) and "content" in message:
        if entry_kind == "compact_boundary":
            m = entry.get("meta") or {}
            s = (f"compaction {m.get('layer', '?')} ({m.get('trigger', '?')}) "
                 f"{m.get('tokens_before', '?')} → {m.get('tokens_after', '?')} tokens")
            return Record(line_no, "compaction", "", t or _time_text(entry.get("timestamp")), s,
                          pretty_text(m), boundary=True)
        hint = "summary" if entry_kind in ("summary", "attachment", "snip_marker") or is_compact_summary(obj) else ""
        rec = _message_record(line_no, message, hint, t or _time_text(entry.get("timestamp")))
        if obj.get("isSidechain"):
            rec.summary = "[sidechain] " + rec.summary
        return rec
    label = typ or entry_kind or "record"
    return Record(line_no, "other", "", t, other_summary(str(label), obj), pretty_text(obj))


def _too_long(line_no: int, max_line: int) -> Record:
    text = f"line {line_no} is longer than {max_line:,} bytes: skipped as corrupt"
    return Record(line_no, "other", "", "", text, text)


def iter_records(path: Path, *, max_line: int = MAX_LINE_BYTES) -> Iterator[tuple[Record, int]]:
    """(record, bytes read so far) for each line of the file. Only a regular file is read (else
    NotRegularFile, an OSError); a line over `max_line` is never held whole and shows as skipped."""
    follower = LogFollower(path, max_line=max_line)
    if not path.exists():
        raise FileNotFoundError(2, "No such file or directory", str(path))
    last = 0
    for n, raw in follower.lines(final=True):
        for skipped in range(last + 1, n):      # the follower leaves out only over-long lines
            yield _too_long(skipped, max_line), follower.offset
        last = n
        rec = parse_line(n, raw.decode("utf-8", errors="replace"))
        if rec is not None:
            yield rec, follower.offset
    for skipped in range(last + 1, follower.stats.lines + 1):
        yield _too_long(skipped, max_line), follower.offset


def load(path: Path, on_batch: Callable[[list[Record], int], None], *, batch_size: int = 2000,
         cancelled: Callable[[], bool] = lambda: False, gate: threading.Event | None = None) -> int:
    """Read the whole file, handing records over in batches (with bytes read so far). Meant for a
    thread: the caller's `on_batch` moves them to the UI. `gate`, when given, is waited on after
    the first batch (tests use it to hold a load half-way). Returns the number of records."""
    batch: list[Record] = []
    total = 0
    first = True
    for rec, done in iter_records(path):
        batch.append(rec)
        if len(batch) >= batch_size:
            on_batch(batch, done)
            total += len(batch)
            batch = []
            if first and gate is not None:
                while not gate.wait(0.05):
                    if cancelled():
                        return total
            first = False
            if cancelled():
                return total
    on_batch(batch, path.stat().st_size if path.exists() else 0)
    return total + len(batch)
