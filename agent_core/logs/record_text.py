"""Readable text for the log records that are not messages: a ctxtui session's meta, state and
history records and its logged events, and any other record (Claude Code's summaries, system
lines, snapshots). The transcript viewer showed these as raw JSON; here each kind gets one line
for the list and an indented `key: value` view for the detail pane. No Textual: plain strings.
"""
from __future__ import annotations

from typing import Any

MAX_TEXT = 20_000
_SCALARS = (str, int, float, bool, type(None))


def _num(v: Any) -> str:
    return f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else str(v)


def _short(v: Any, width: int = 80) -> str:
    s = " ".join(str(v).split())
    return s if len(s) <= width else s[:width - 1] + "…"


class _Full(Exception):
    """The text reached MAX_TEXT: stop walking (a history record can carry megabytes)."""


class _Lines:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.size = 0

    def add(self, line: str) -> None:
        self.lines.append(line)
        self.size += len(line) + 1
        if self.size > MAX_TEXT:
            raise _Full


def _walk(value: Any, out: _Lines, indent: int, depth: int) -> None:
    pad = "  " * indent
    if depth > 8:
        out.add(pad + "…")
        return
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(v, _SCALARS):
                lines = (v if isinstance(v, str) else _num(v)).splitlines() or [""]
                out.add(f"{pad}{k}: {lines[0]}")
                for ln in lines[1:]:
                    out.add(f"{pad}  {ln}")
            elif isinstance(v, list) and all(isinstance(x, _SCALARS) for x in v):
                out.add(f"{pad}{k}: " + (", ".join(_num(x) for x in v[:50]) or "(none)")
                        + (f" … {len(v) - 50:,} more" if len(v) > 50 else ""))
            elif not v:
                out.add(f"{pad}{k}: (none)")
            else:
                out.add(f"{pad}{k}:")
                _walk(v, out, indent + 1, depth + 1)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            if isinstance(v, _SCALARS):
                out.add(f"{pad}- {_num(v)}")
            else:
                out.add(f"{pad}- item {i + 1}:")
                _walk(v, out, indent + 1, depth + 1)
    else:
        out.add(pad + _num(value))


def pretty_text(value: Any) -> str:
    """`key: value` lines, nested objects indented, lists of scalars on one line; cut at MAX_TEXT."""
    out = _Lines()
    try:
        _walk(value, out, 0, 0)
    except _Full:
        out.lines.append("…")
    return "\n".join(out.lines)


def tool_input_text(inp: Any) -> str:
    """A tool call's input as `key=value` pairs (a command or path reads as itself)."""
    if not isinstance(inp, dict):
        return _short(inp, 2000)
    return ", ".join(f"{k}={v if isinstance(v, str) else _num(v) if isinstance(v, _SCALARS) else '…'}"
                     for k, v in inp.items()) or "(no input)"


def _usage_line(usage: Any) -> str:
    if not isinstance(usage, dict):
        return ""
    parts = [(usage.get("input_tokens"), "in"), (usage.get("output_tokens"), "out"),
             (usage.get("cache_read_input_tokens"), "cache read"),
             (usage.get("cache_creation_input_tokens"), "cache write")]
    return " · ".join(f"{_num(n)} {label}" for n, label in parts if isinstance(n, int) and n)


def event_summary(e: dict) -> tuple[str, str]:
    """(kind, one line) for a ctxtui event logged in a session."""
    t = e.get("type")
    if t == "model_call":
        return "other", (f"model call ({e.get('purpose', '?')}) {e.get('model', '?')}: "
                         f"{_usage_line(e.get('usage')) or 'no usage'}")
    if t == "tool_call":
        inp = e.get("input")
        inp = inp if isinstance(inp, dict) else {}
        arg = next((inp[k] for k in ("command", "path", "pattern", "focus") if k in inp), "")
        return "tool", f"call {e.get('name', '?')} {_short(arg, 120)}".rstrip()
    if t == "tool_result":
        err = " (error)" if e.get("is_error") else ""
        size = _num(e.get("size", 0))
        return "tool", f"result of {e.get('name', '?')}{err}, {size} chars: {_short(e.get('preview', ''), 160)}"
    if t == "error":
        return "other", f"error ({e.get('kind', '?')}): {_short(e.get('message', ''), 200)}"
    if t in ("notice", "waiting"):
        return "other", f"notice: {_short(e.get('message', ''), 200)}"
    if t == "turn_finished":
        return "other", f"turn {e.get('turns', '?')} finished: {e.get('stop_reason', '?')}"
    if t == "assistant_done":
        return "other", "answer finished" + (f" ({e['stop_reason']})" if e.get("stop_reason") else "")
    if t == "breaker":
        return "compaction", f"breaker {e.get('breaker', '?')} tripped: {_short(e.get('reason', ''), 160)}"
    if t == "context":
        return "other", (f"context {_num(e.get('tokens', '?'))} / {_num(e.get('window', '?'))} tokens "
                         f"({e.get('state', '?')})")
    return "other", f"{t or 'event'}: " + _fields(e, skip=("type",))


def _fields(obj: dict, skip: tuple[str, ...] = ()) -> str:
    """The first few scalar fields of a record, `key=value`, for its list line."""
    parts = [f"{k}={_short(v, 40)}" for k, v in obj.items() if k not in skip and isinstance(v, _SCALARS)][:5]
    nested = [k for k, v in obj.items() if k not in skip and not isinstance(v, _SCALARS)][:4]
    return ", ".join(parts + [f"{k}: …" for k in nested]) or "(empty)"


def meta_summary(obj: dict) -> str:
    sid, created = obj.get("session_id", "?"), obj.get("created", "?")
    return (f"session {sid} started {created} · model {obj.get('model', '?')} · "
            f"ctxtui {obj.get('version', '?')} · workspace {obj.get('workspace', '?')}")


def state_summary(obj: dict) -> str:
    parts = [k for k in obj if k not in ("t", "at", "all", "index")]
    turns = obj.get("turns")
    return "state saved: " + ", ".join(parts) + (f" (after turn {turns})" if isinstance(turns, int) else "")


def delta_summary(obj: dict) -> str:
    """A session log's `delta` record: the state parts it changes."""
    ops = obj.get("ops")
    ops = ops if isinstance(ops, list) else []
    parts = dict.fromkeys(str(op[1][0]) for op in ops if isinstance(op, list) and len(op) > 1
                          and isinstance(op[1], list) and op[1])
    return "state changed: " + (", ".join(parts) or "nothing")


def other_summary(label: str, obj: dict) -> str:
    return f"{label}: " + _fields(obj, skip=("type", "t"))
