"""Recently read files, re-attached after an LLM compaction (CC post-compact restore).

A summary cannot hold the code the model was looking at a moment ago; re-reading it would cost a
turn. The files come from the history itself (read_file calls paired with their results, files
the user attached with `@path`, and files re-attached by an earlier compaction); an optional
callable returns their current contents (the agent reads from disk, so edits since the read are
seen). Budgets (CC): 5 files, 5,000 tokens each, 50,000 in all; a file already visible in what
was kept is skipped. A file too large for what is left of its budget is not cut down (a cut copy
can silently lose the part the agent needs): it is left out, and a short note in its place names it
and says to read it again (as Claude Code does).
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
    """Files whose contents the kept entries already show (a read with its result, or an attachment;
    not a result microcompact cleared, nor a note that a file was left out)."""
    return {_key(r.path) for r in recent_reads(entries) if r.content is not None}


def _attachment(path: str, content: str, source: str, partial: bool) -> Entry:
    """The file's whole content as an attachment entry."""
    return user(f"Re-attached after compaction: {path} ({source}).\n<file path=\"{path}\">\n{content}\n</file>",
                kind="attachment", path=path, source=source, partial=partial)


def left_out_note(path: str, tokens: int, room: int) -> Entry:
    """What stands for a file too large to re-attach: its name and what to do, never a cut copy.
    An attachment entry (no file body: a later compaction does not take it for the file's content)."""
    return user(f"{path} was read before this compaction but is not re-attached: at about {tokens:,} tokens it is "
                f"over the {room:,} left for it. Read it again with read_file if you need it.",
                kind="attachment", path=path, left_out=True)


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
    (None or an error: gone, outside the workspace) is skipped; without it, the contents as last read.
    A file over what is left of its budget gets a note instead (`left_out_note`, meta `left_out`),
    which takes one of the `max_files` places."""
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
        entry = _attachment(rec.path, content, source, partial)
        if entry.tokens > room:
            entry = left_out_note(rec.path, entry.tokens, room)
            if entry.tokens > room:      # not even the note fits what is left
                continue
        out.append(entry)
        used += entry.tokens
        seen.add(_key(rec.path))
    return out
