"""Recently read files, re-attached after an LLM compaction (CC post-compact restore).

A summary cannot hold the code the model was looking at a moment ago; re-reading it would cost a
turn. The files come from the history itself (read_file calls paired with their results, files
the user attached with `@path`, and files re-attached by an earlier compaction); an optional
callable returns their current contents (the agent reads from disk, so edits since the read are
seen). Budgets (CC): 5 files, 5,000 tokens each, 50,000 in all; a file already visible in what
was kept is skipped.
"""
from __future__ import annotations

import inspect
import os
import re
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Sequence, Union

from compaction.entry import Entry, user
from compaction.mentioned_files import mentioned

READ_TOOL = "read_file"
CLEARED_PREFIX = "[Old result of "   # microcompact's placeholder for a cleared result
MIN_USEFUL_TOKENS = 200     # a smaller remainder of the total budget is not worth a cut-down file

ReadFile = Callable[[str], Union[str, None, Awaitable[Union[str, None]]]]

_FILE_BODY = re.compile(r"<file path=\"[^\"]*\">\n(.*)\n</file>", re.S)


def _key(path: str) -> str:
    return os.path.normpath(path)


def _result_text(block: dict[str, Any]) -> str:
    c = block.get("content", "")
    if isinstance(c, str):
        return c
    return "\n".join(b.get("text", "") for b in c if b.get("type") == "text")


@dataclass(frozen=True)
class ReadRecord:
    path: str                 # as the model wrote it
    content: str | None       # what the latest successful read returned
    order: int                # index of that read in the history (higher is newer)
    partial: bool             # the read asked for a line range


def recent_reads(entries: Sequence[Entry]) -> list[ReadRecord]:
    """One record per file, newest read first: successful read_file results, files attached by an
    @-mention and earlier re-attachments."""
    pending: dict[str, dict[str, Any]] = {}
    latest: dict[str, ReadRecord] = {}
    for i, e in enumerate(entries):
        if e.kind == "attachment" and e.meta.get("path"):
            m = _FILE_BODY.search(e.text())
            latest[_key(e.meta["path"])] = ReadRecord(e.meta["path"], m.group(1) if m else None, i,
                                                      bool(e.meta.get("partial")))
            continue
        if not e.sent:
            continue
        for file in mentioned(e):
            latest[_key(file.path)] = ReadRecord(file.path, file.content, i, file.partial)
        for b in e.content:
            t = b.get("type")
            if t == "tool_use" and b.get("name") == READ_TOOL and isinstance(b.get("input"), dict) \
                    and isinstance(b["input"].get("path"), str):
                pending[b["id"]] = b["input"]
            elif t == "tool_result" and b.get("tool_use_id") in pending:
                inp = pending.pop(b["tool_use_id"])
                if b.get("is_error"):
                    continue
                partial = inp.get("offset") is not None or inp.get("limit") is not None
                raw = _result_text(b)
                # microcompact cleared it: only a re-read can help
                text = None if raw.startswith(CLEARED_PREFIX) else raw
                latest[_key(inp["path"])] = ReadRecord(inp["path"], text, i, partial)
    return sorted(latest.values(), key=lambda r: r.order, reverse=True)


def visible_paths(entries: Sequence[Entry]) -> set[str]:
    """Files whose contents the kept entries already show (a read with its result, or an attachment)."""
    return {_key(r.path) for r in recent_reads(entries)}


def _attachment(path: str, content: str, source: str, partial: bool, max_tokens: int) -> Entry | None:
    """An attachment entry of at most `max_tokens` (estimated), cut at the end with a marker."""
    head = f"Re-attached after compaction: {path} ({source}).\n"
    marker = f"\n[... cut to fit the compaction budget; read_file {path} for the rest]"

    def build(body: str) -> Entry:
        return user(f"{head}<file path=\"{path}\">\n{body}\n</file>", kind="attachment", path=path,
                    source=source, partial=partial)

    entry = build(content)
    if entry.tokens <= max_tokens:
        return entry
    chars = len(content)
    for _ in range(8):
        over = entry.tokens - max_tokens
        if over <= 0:
            return entry
        chars = max(0, chars - over * 4 - len(marker) - 8)
        if chars == 0:
            break
        entry = build(content[:chars] + marker)
    return entry if entry.tokens <= max_tokens else None


async def _current(read_file: ReadFile, path: str) -> str | None:
    try:
        got = read_file(path)
        if inspect.isawaitable(got):
            got = await got
    except Exception:
        return None
    return got if isinstance(got, str) else None


async def reinject(history: Sequence[Entry], kept: Sequence[Entry], *, read_file: ReadFile | None = None,
                   max_files: int = 5, file_tokens: int = 5_000, total_tokens: int = 50_000) -> list[Entry]:
    """Attachment entries for the most recently read files of `history`, newest first, within
    every budget. With `read_file`, the current contents are used and a file it cannot return
    (None or an error: gone, outside the workspace) is skipped; without it, the contents as last read."""
    seen = visible_paths(kept)
    out: list[Entry] = []
    used = 0
    for rec in recent_reads(history):
        if len(out) >= max_files:
            break
        if _key(rec.path) in seen:
            continue
        if read_file is not None:
            content = await _current(read_file, rec.path)
            source, partial = "current contents", False
        else:
            content = rec.content
            source = "as last read, a line range only" if rec.partial else "as last read"
            partial = rec.partial
        if content is None or not content.strip():
            continue
        room = min(file_tokens, total_tokens - used)
        if room < min(MIN_USEFUL_TOKENS, file_tokens):
            continue
        entry = _attachment(rec.path, content, source, partial, room)
        if entry is None:
            continue
        out.append(entry)
        used += entry.tokens
        seen.add(_key(rec.path))
    return out
