"""Token accounting: cheap estimates cached per entry, anchored on real usage.

A turn costs O(entries since the last response): the count walks back only to the latest
assistant entry that carries `usage`.
"""
from __future__ import annotations

import json
import math
from typing import Sequence

from .entry import Entry

CHARS_PER_TOKEN = 4
JSON_CHARS_PER_TOKEN = 2
MEDIA_TOKENS = 2_000
MESSAGE_OVERHEAD = 4

CATEGORIES = ("system", "tools", "user_text", "assistant_text", "tool_calls", "tool_results",
              "summaries", "free", "autocompact_buffer")


def _looks_json(s: str) -> bool:
    s = s.strip()
    return len(s) > 1 and ((s[0] == "{" and s[-1] == "}") or (s[0] == "[" and s[-1] == "]"))


def estimate_text(s: str) -> int:
    if not s:
        return 0
    per = JSON_CHARS_PER_TOKEN if _looks_json(s) else CHARS_PER_TOKEN
    return math.ceil(len(s) / per)


def estimate_block(b: dict) -> int:
    t = b.get("type")
    if t == "text":
        return estimate_text(b.get("text", ""))
    if t == "thinking":
        return estimate_text(b.get("thinking", ""))
    if t == "redacted_thinking":
        return estimate_text(b.get("data", ""))
    if t in ("image", "document"):
        return MEDIA_TOKENS
    if t == "tool_use":
        return estimate_text(b.get("name", "")) + math.ceil(
            len(json.dumps(b.get("input", {}), separators=(",", ":"))) / CHARS_PER_TOKEN)
    if t == "tool_result":
        c = b.get("content", "")
        if isinstance(c, str):
            return estimate_text(c) + 2
        return sum(estimate_block(x) for x in c) + 2
    return estimate_text(json.dumps(b))


def estimate_message(message: dict) -> int:
    c = message.get("content", "")
    if isinstance(c, str):
        return estimate_text(c) + MESSAGE_OVERHEAD
    return sum(estimate_block(b) for b in c) + MESSAGE_OVERHEAD


def estimate_entries(entries: Sequence[Entry]) -> int:
    return sum(e.tokens for e in entries)


def usage_total(usage: dict) -> int:
    """Tokens a response's usage says the context held, output included."""
    return (int(usage.get("input_tokens") or 0) + int(usage.get("cache_creation_input_tokens") or 0)
            + int(usage.get("cache_read_input_tokens") or 0) + int(usage.get("output_tokens") or 0))


def anchor_index(entries: Sequence[Entry]) -> int | None:
    """The latest entry whose usage anchors the count, or None."""
    for i in range(len(entries) - 1, -1, -1):
        if entries[i].usage is not None and entries[i].sent:
            return i
    return None


def count_tokens(entries: Sequence[Entry], overhead: int = 0) -> int:
    """The count that drives thresholds (CC `tokenCountWithEstimation`).

    The latest usage (which already includes system prompt and tools) plus its `usage_adjust`
    (what layers freed before it since) plus estimates of the entries after it. With no usage yet,
    `overhead` (system prompt + tool definitions estimate) plus every entry's estimate.
    """
    i = anchor_index(entries)
    if i is None:
        return overhead + estimate_entries(entries)
    a = entries[i]
    return max(0, usage_total(a.usage) + int(a.meta.get("usage_adjust", 0))) + estimate_entries(entries[i + 1:])


def adjust_anchor(entries: list[Entry], delta: int, upto: int) -> list[Entry]:
    """Shift the usage anchor by `delta` tokens when entries at or before it changed (index <= upto).

    Layers call this so the count stays truthful between a rewrite and the next response.
    Returns a new list (the input is not mutated)."""
    i = anchor_index(entries)
    if i is None or delta == 0 or upto > i:
        return list(entries)
    a = entries[i]
    out = list(entries)
    out[i] = a.with_meta(usage_adjust=int(a.meta.get("usage_adjust", 0)) + delta)
    return out


def categorize_entry(e: Entry) -> dict[str, int]:
    cats = {"user_text": 0, "assistant_text": 0, "tool_calls": 0, "tool_results": 0, "summaries": 0}
    if not e.sent:
        return cats
    if e.kind in ("summary", "attachment", "snip_marker"):
        cats["summaries"] = e.tokens
        return cats
    for b in e.content:
        t = b.get("type")
        n = estimate_block(b)
        if t == "tool_use":
            cats["tool_calls"] += n
        elif t == "tool_result":
            cats["tool_results"] += n
        elif e.role == "assistant":
            cats["assistant_text"] += n
        else:
            cats["user_text"] += n
    key = "assistant_text" if e.role == "assistant" else "user_text"
    cats[key] += MESSAGE_OVERHEAD
    return cats


class CategoryTally:
    """Running per-category sums over a history that grows by appends, so the context pane costs
    O(new entries) per turn. A different list (a compaction swapped the history) or a shorter one
    is summed again, once."""

    def __init__(self) -> None:
        self._list: Sequence[Entry] | None = None
        self._n = 0
        self._sums: dict[str, int] = {}

    def sums(self, entries: Sequence[Entry]) -> dict[str, int]:
        if entries is not self._list or len(entries) < self._n:
            self._list, self._n, self._sums = entries, 0, {}
        for e in entries[self._n:]:
            for k, v in e.category_tokens.items():
                self._sums[k] = self._sums.get(k, 0) + v
        self._n = len(entries)
        return dict(self._sums)


def breakdown(entries: Sequence[Entry], *, system_tokens: int, tools_tokens: int, window: int,
              threshold: int, autocompact_enabled: bool = True, tally: CategoryTally | None = None) -> dict[str, int]:
    """Category breakdown for the context pane (like CC `/context`). Uses cached per-entry figures;
    with a `tally` only the entries appended since its last call are read."""
    cats = {c: 0 for c in CATEGORIES}
    cats["system"] = system_tokens
    cats["tools"] = tools_tokens
    for k, v in (tally or CategoryTally()).sums(entries).items():
        cats[k] += v
    used = sum(cats.values())
    buffer = max(0, window - threshold) if autocompact_enabled else 0
    cats["autocompact_buffer"] = buffer
    cats["free"] = max(0, window - used - buffer)
    return cats
