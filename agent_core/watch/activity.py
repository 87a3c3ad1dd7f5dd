"""`ctxtui watch`'s activity feed: the user's prompts and the tool calls, as they land in the log.

The log layer (agent_core.logs) yields only usage and compaction records, so this reads the same
file a second time for what a person did: its own `LogFollower` reads only the bytes appended
since the last read. The format is sniffed as the log layer does (`sniff_format`):
- Claude Code: `user` records with text content (not tool results, `isMeta` notes or compaction
  summaries, see `is_compact_summary`) and `assistant` records with `tool_use` blocks;
- ctxtui: `entry` / `history` records (`logged_entries`): user message entries with text and
  assistant entries with `tool_use` blocks. Each decoded ctxtui record is also handed to
  `on_record`, so the history behind the breakdown (watch_breakdown.py) is rebuilt from the same
  read, not a third one.
Items are reported once (prompts by uuid, tool calls by tool_use id), sub-agents' are left out.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from agent_core.logs import LogFollower
from agent_core.logs.claude_code import is_compact_summary, parse_timestamp
from agent_core.logs.reader import looks_whole, sniff_format
from agent_core.sessions.log_records import logged_entries

TEXT_CHARS = 200          # an item's text is cut to this many characters (one line in the feed)
# Tool inputs that say best what a call does, in order of preference.
INPUT_KEYS = ("command", "file_path", "path", "pattern", "url", "query", "description", "prompt")

_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class ActivityItem:
    """One thing that happened: `kind` "prompt" (text: what the user asked) or "tool" (`tool`
    names it, text: its main argument)."""
    kind: str
    text: str
    key: str
    timestamp: float | None = None
    tool: str | None = None


def one_line(text: str, limit: int = TEXT_CHARS) -> str:
    """Whitespace collapsed, cut to `limit` characters with … when longer."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"


def tool_summary(tool_input: Any) -> str:
    """The argument of a tool call that says what it does (a command, a file, a pattern...)."""
    if not isinstance(tool_input, dict):
        return ""
    for k in INPUT_KEYS:
        v = tool_input.get(k)
        if isinstance(v, str) and v.strip():
            return one_line(v)
    return ""


def prompt_text(content: Any) -> str | None:
    """The text a user typed, from a message's content (a string or blocks); None when it holds
    no text (tool results) or is Claude Code's own wrapping (`<task-notification>`, command
    output). A slash command (`<command-name>/x</command-name>`) reads as the command."""
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        if any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
            return None
        text = "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")
    else:
        return None
    text = text.strip()
    if text.startswith("<command-name>"):
        return text[len("<command-name>"):].split("<", 1)[0].strip() or None
    if not text or text.startswith("<"):
        return None
    return one_line(text)


def tool_items(content: Any, timestamp: float | None) -> list[ActivityItem]:
    if not isinstance(content, list):
        return []
    return [ActivityItem("tool", tool_summary(b.get("input")), str(b.get("id") or ""), timestamp,
                         str(b.get("name") or "?"))
            for b in content if isinstance(b, dict) and b.get("type") == "tool_use"]


def claude_code_items(obj: dict) -> list[ActivityItem]:
    """The activity in one Claude Code record (main chain only)."""
    if obj.get("isSidechain"):
        return []
    msg = obj.get("message")
    if not isinstance(msg, dict):
        return []
    ts = parse_timestamp(obj.get("timestamp"))
    kind = obj.get("type")
    if kind == "assistant":
        return tool_items(msg.get("content"), ts)
    if kind == "user" and not obj.get("isMeta") and not is_compact_summary(obj):
        text = prompt_text(msg.get("content"))
        if text is not None:
            return [ActivityItem("prompt", text, str(obj.get("uuid") or ""), ts)]
    return []


def ctxtui_items(rec: dict) -> list[ActivityItem]:
    """The activity in one ctxtui record: its logged entries' prompts and tool calls."""
    out: list[ActivityItem] = []
    for e in logged_entries(rec):
        msg = e.get("message")
        if not isinstance(msg, dict) or e.get("kind", "message") != "message":
            continue
        ts = parse_timestamp(e.get("timestamp"))
        if msg.get("role") == "assistant":
            out.extend(tool_items(msg.get("content"), ts))
        elif msg.get("role") == "user":
            text = prompt_text(msg.get("content"))
            if text is not None:
                out.append(ActivityItem("prompt", text, str(e.get("uuid") or ""), ts))
    return out


def _worth_decoding(fmt: str | None, line: bytes) -> bool:
    """Cheap pre-filter for Claude Code: tool results (most of a log's bytes) are never decoded."""
    if fmt != "claude_code":
        return True
    if b'"tool_use"' in line:
        return True
    return b'"user"' in line and b'"tool_use_id"' not in line


class ActivityReader:
    """Follows one log; `read()` gives the activity appended since the last call. `on_record`
    (ctxtui logs only) gets every decoded record with its line number."""

    def __init__(self, path: str | Path, *, on_record: Callable[[dict, int], None] | None = None) -> None:
        self.follower = LogFollower(Path(path))
        self.format: str | None = None
        self.on_record = on_record
        self._seen: set[str] = set()

    @property
    def resets(self) -> int:
        return self.follower.resets

    def read(self) -> list[ActivityItem]:
        out: list[ActivityItem] = []
        for lineno, raw in self.follower.lines():
            line = raw.rstrip(b" \t\r")
            if not looks_whole(line) or not _worth_decoding(self.format, line):
                continue             # corrupt lines are counted by the log layer's reader
            try:
                obj = _DECODER.decode(line.decode())
            except (ValueError, RecursionError):
                continue
            if not isinstance(obj, dict):
                continue
            if self.format is None:
                self.format = sniff_format(obj)
            if self.format == "ctxtui":
                if self.on_record is not None:
                    self.on_record(obj, lineno)
                items = ctxtui_items(obj)
            else:
                items = claude_code_items(obj)
            for item in items:
                if item.key and item.key in self._seen:
                    continue
                self._seen.add(item.key)
                out.append(item)
        return out
