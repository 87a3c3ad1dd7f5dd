"""Token accounting: cheap estimates cached per entry, anchored on real usage.

A turn costs O(entries since the last response): the count walks back only to the latest
assistant entry that carries `usage`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from compaction.entry import Entry
# The per-message estimates live in estimate.py (entries use them); callers get them here too.
from compaction.estimate import CHARS_PER_TOKEN as CHARS_PER_TOKEN
from compaction.estimate import MEDIA_TOKENS as MEDIA_TOKENS
from compaction.estimate import MESSAGE_OVERHEAD as MESSAGE_OVERHEAD
from compaction.estimate import estimate_block as estimate_block
from compaction.estimate import estimate_message as estimate_message
from compaction.estimate import estimate_text as estimate_text

CATEGORIES = ("system", "memory", "tools", "mcp_tools", "user_text", "assistant_text", "tool_calls",
              "tool_results", "summaries", "free", "autocompact_buffer")


def estimate_entries(entries: Sequence[Entry]) -> int:
    return sum(e.tokens for e in entries)


@dataclass(frozen=True)
class Calibration:
    """Server tokens per estimated token (docs/engine.md, "Counting"): `ratio` for what the user and
    the tools send, `assistant` for the model's answers (a server counts prose, JSON and tool calls
    each at its own rate, and answers are mostly prose). 1.0 both: uncalibrated."""
    ratio: float = 1.0
    assistant: float = 1.0

    def weighted(self, entries: Sequence[Entry]) -> float:
        """The entries' estimate in units of `ratio`: answers weighted by assistant / ratio, so one
        figure (a layer's `usage_adjust`) scaled by `ratio` counts each part at its own rate."""
        w = self.assistant / self.ratio if self.ratio > 0 else 1.0
        if w == 1.0:
            return sum(e.tokens for e in entries)
        return sum(e.tokens * w if e.role == "assistant" else e.tokens for e in entries)


def _calibration(ratio: float | Calibration) -> Calibration:
    return ratio if isinstance(ratio, Calibration) else Calibration(ratio, ratio)


def usage_total(usage: dict[str, Any] | None) -> int:
    """Tokens a response's usage says the context held, output included (0 without a usage)."""
    if usage is None:
        return 0
    return (int(usage.get("input_tokens") or 0) + int(usage.get("cache_creation_input_tokens") or 0)
            + int(usage.get("cache_read_input_tokens") or 0) + int(usage.get("output_tokens") or 0))


def anchor_index(entries: Sequence[Entry]) -> int | None:
    """The latest entry whose usage anchors the count, or None."""
    for i in range(len(entries) - 1, -1, -1):
        if entries[i].usage is not None and entries[i].sent:
            return i
    return None


def count_tokens(entries: Sequence[Entry], overhead: int = 0, ratio: float | Calibration = 1.0) -> int:
    """The count that drives thresholds (CC `tokenCountWithEstimation`).

    The latest usage (which already includes system prompt and tools, in the server's own tokens),
    plus its `real_adjust` (server tokens: a count_tokens confirmation), plus `ratio` times its
    `usage_adjust` (what layers freed before it since, in estimated tokens) and the estimates of the
    entries after it. With no usage yet, `overhead` (system prompt + tool definitions, in server
    tokens when they were counted) plus `ratio` times every entry's estimate. `ratio` is the
    calibration: server tokens per estimated token (docs/engine.md, "Counting"); 1.0 uncalibrated.
    A `Calibration` counts answers at their own rate (`usage_adjust` is then in its `ratio`'s units).
    """
    cal = _calibration(ratio)
    i = anchor_index(entries)
    if i is None:
        return overhead + round(cal.ratio * cal.weighted(entries))
    a = entries[i]
    estimated = int(a.meta.get("usage_adjust", 0)) + cal.weighted(entries[i + 1:])
    return max(0, usage_total(a.usage) + int(a.meta.get("real_adjust", 0)) + round(cal.ratio * estimated))


def adjust_anchor(entries: list[Entry], delta: int, upto: int, *, real: bool = False) -> list[Entry]:
    """Shift the usage anchor by `delta` estimated tokens (`real`: server tokens, which the
    calibration does not scale) when entries at or before it changed (index <= upto).

    Layers call this so the count stays truthful between a rewrite and the next response.
    Returns a new list (the input is not mutated)."""
    i = anchor_index(entries)
    if i is None or delta == 0 or upto > i:
        return list(entries)
    a = entries[i]
    key = "real_adjust" if real else "usage_adjust"
    out = list(entries)
    out[i] = a.with_meta(**{key: int(a.meta.get(key, 0)) + delta})
    return out


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


OPTIONAL = ("memory", "mcp_tools")     # left out of a breakdown when the session has none


def breakdown(entries: Sequence[Entry], *, system_tokens: int, tools_tokens: int, window: int,
              threshold: int, autocompact_enabled: bool = True, tally: CategoryTally | None = None,
              total: int | None = None, memory_tokens: int = 0, mcp_tokens: int = 0) -> dict[str, int]:
    """Category breakdown for the context pane (like CC `/context`). Uses cached per-entry figures;
    with a `tally` only the entries appended since its last call are read.

    `entries` should be the projected view (what the next request holds). With `total` (the count
    shown beside the breakdown) the used categories are scaled to sum to it exactly — the estimates
    split the count, real usage sets it — and the buffer then shrinks before free space goes
    negative, so used + free + buffer is the window whenever the count fits in it.

    `memory_tokens` (memory files) and `mcp_tokens` (MCP servers' tool definitions) are parts of
    the system prompt and the tools, counted apart: their own categories, shown only when held."""
    cats = {c: 0 for c in CATEGORIES}
    cats["system"] = max(0, system_tokens - memory_tokens)
    cats["memory"] = memory_tokens
    cats["tools"] = max(0, tools_tokens - mcp_tokens)
    cats["mcp_tools"] = mcp_tokens
    for k, v in (tally or CategoryTally()).sums(entries).items():
        cats[k] += v
    if total is not None:
        _scale_to(cats, max(0, total))
    used = sum(cats.values())
    buffer = max(0, window - threshold) if autocompact_enabled else 0
    buffer = max(0, min(buffer, window - used))
    cats["autocompact_buffer"] = buffer
    cats["free"] = max(0, window - used - buffer)
    for k in OPTIONAL:
        if not cats[k]:
            del cats[k]
    return cats


def _scale_to(cats: dict[str, int], total: int) -> None:
    """Scale the used categories (in place) so they sum to `total` exactly (largest remainder)."""
    keys = [k for k in CATEGORIES if k not in ("free", "autocompact_buffer")]
    est = sum(cats[k] for k in keys)
    if est == total:
        return
    if est <= 0:
        for k in keys:
            cats[k] = 0
        cats["system"] = total
        return
    exact = {k: cats[k] * total / est for k in keys}
    floors = {k: int(v) for k, v in exact.items()}
    short = total - sum(floors.values())
    for k in sorted(keys, key=lambda k: exact[k] - floors[k], reverse=True)[:short]:
        floors[k] += 1
    cats.update(floors)
