"""Layer 3, microcompact (CC `microCompact.ts`): clear old tool results in place.

Only results of `compactable_tools` (minus `preserved_tools`) that the model has already seen —
in entries before the last assistant message — are ever cleared; a result the model has not seen
is never touched. A cleared result keeps its tool pair and becomes `[Old result of <tool> cleared]`;
results of `micro_min_chars` or fewer characters, or whose placeholder would not be smaller, stay.

Two triggers:
- time-based (checked first): the gap between `ctx.now` and the last assistant message exceeds
  `time_gap_minutes` (default None: the cache TTL, `cache_ttl` — the cached prefix has expired, so
  rewriting costs nothing extra) — clear every seen compactable result but the last
  `time_keep_recent` (at least 1). An explicit number is obeyed as given.
- count-based: only when the count is at or above `micro_trigger_ratio` of the effective window
  (default half: below that the context is cheap and granular results are worth more), keep the
  last `micro_keep_recent` seen compactable results, and more of the newest while they add up to
  `micro_keep_share` of the effective window (a quarter: measured against Claude Code, keeping
  five reads lost the ones asked for next, issue 49), and clear the older ones — only in a batch
  that frees at least `micro_clear_at_least_ratio` of the window (like the API's
  `clear_at_least`), and (with `cache_aware`, the default) only on a favourable cache verdict
  (compaction/cache_economics.py): a rewrite turns the cached prefix after the first cleared
  result into cache writes, so it must be free (cache cold), keep the count under the auto-compact
  threshold, or pay back over the calls ahead.

Every report says what the rewrite cost and should save (`details["cache"]`, and the action's
last clause).

Clearing rewrites the working history the loop adopts (and logs), so there is no persistent
state: the per-process records below are rebuilt by one scan after a resume or a snip.

Cost: results are registered once (per-process scan mark); the keep window's share looks at no
more than `KEEP_SCAN` results past the counted ones; a running sum of what could be freed makes
the batching test O(1); a clear touches only the pending results; settled records are dropped
from the front, so a turn costs O(new entries) amortized.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from compaction import cache_economics as ce
from compaction.accounting.cache_model import ttl_seconds
from compaction.entry import Entry
from compaction.layerkit import (block_tokens, collapsed_ranges, has_tool_results, mark_get, mark_set, result_chars,
                                 rewrite, runtime, tool_uses_before)
from compaction.layer_context import LayerContext
from compaction.report import CompactionReport, LayerResult
from compaction.accounting.tokens import count_tokens

NAME = "microcompact"


@dataclass(slots=True)
class Seen:
    """One compactable tool result, registered once."""
    tool_use_id: str
    index: int          # its entry's index in the history it was registered from
    uuid: str           # that entry's uuid: a mismatch means the history changed under the records
    tool: str
    free: int           # tokens clearing it would free (0: too small, or already cleared)
    cleared: bool


@dataclass
class Book:
    """The per-process records: `seen` in history order; `seen[:keep_from]` lies outside the
    count-based keep window and `freeable` is what clearing it would free (a running sum)."""
    seen: list[Seen] = field(default_factory=list)
    keep_from: int = 0
    freeable: int = 0

    def refresh_freeable(self) -> None:
        self.freeable = sum(r.free for r in self.seen[:self.keep_from] if not r.cleared)


def placeholder(tool: str) -> str:
    return f"[Old result of {tool} cleared]"


def _freeable(b: dict[str, Any], tool: str, min_chars: int) -> int:
    if result_chars(b) <= min_chars:
        return 0
    return max(0, block_tokens(b) - block_tokens({**b, "content": placeholder(tool)}))


def last_assistant(entries: list[Entry]) -> int:
    for i in range(len(entries) - 1, -1, -1):
        if entries[i].role == "assistant" and entries[i].sent:
            return i
    return -1


def apply(entries: list[Entry], ctx: LayerContext) -> LayerResult:
    cfg = ctx.config
    if not cfg.microcompact_enabled:
        return LayerResult(entries)
    rt = runtime(ctx.state, NAME)
    start = mark_get(rt, "seen", entries) + 1
    if start == 0 or "book" not in rt:
        start = 0
        rt["book"] = Book()
    book: Book = rt["book"]
    _register(book, entries, start, cfg.compactable_tools - cfg.preserved_tools, cfg.micro_min_chars)
    la = last_assistant(entries)
    first_unseen = _move_keep_window(book, la, cfg.micro_keep_recent,
                                     int(cfg.micro_keep_share * ctx.budget.effective_window))
    targets, trigger, verdict = _choose(book, entries, ctx, la, first_unseen)
    replaced, deltas, freed_est, stale = _clear(entries, targets)
    if targets:
        book.refresh_freeable()
    _drop_settled(book)

    out = rewrite(entries, {i: entries[i].with_content(bl) for i, bl in replaced.items()}, deltas, ctx.state) \
        if replaced else entries
    if stale:
        rt.pop("seen", None)   # the list changed under the records: rebuild next run
    else:
        mark_set(rt, "seen", out)
    if not replaced:
        return LayerResult(entries)
    n = len(targets)
    ce.note_rewrite(entries, ctx, min(r.index for r in targets))
    action = f"cleared {n} old tool result(s) the model had already seen (about {freed_est:,} tokens)"
    if trigger == "time":
        action += f"; {int((ctx.now - entries[la].timestamp) // 60)} min since the last response"
    assert verdict is not None   # targets were chosen, so they were judged
    action += f"; {ce.describe(verdict)}"
    report = CompactionReport(layer=NAME, trigger=trigger, action=action, tokens_before=ctx.tokens,
                              tokens_after=count_tokens(out, cfg.overhead_tokens, cfg.count_ratio),
                              details={"cleared": n, "freed_estimate": freed_est, "cache": verdict.details()})
    return LayerResult(out, report)


def _register(book: Book, entries: list[Entry], start: int, tools: set[str] | frozenset[str],
              min_chars: int) -> None:
    """Record the compactable results added since the last run."""
    for i in range(start, len(entries)):
        e = entries[i]
        if not has_tool_results(e):
            continue
        uses = tool_uses_before(entries, i)
        for b in e.content:
            if b.get("type") != "tool_result":
                continue
            tid = b.get("tool_use_id")
            if not isinstance(tid, str):
                continue
            tool = uses.get(tid, {}).get("name")
            if not isinstance(tool, str) or tool not in tools:
                continue
            done = b.get("content") == placeholder(tool)
            book.seen.append(Seen(tid, i, e.uuid, tool, 0 if done else _freeable(b, tool, min_chars), done))


KEEP_SCAN = 256     # results looked at to fill the token share of the keep window (bounds a turn's work)


def _move_keep_window(book: Book, last_assistant_at: int, keep_recent: int, keep_tokens: int = 0) -> int:
    """Results after the last assistant message are unseen; the last `keep_recent` seen ones are
    kept, and more of the newest while they add up to `keep_tokens`. Moves the window (and its
    running sum) and returns the index of the first unseen one."""
    first_unseen = len(book.seen)
    while first_unseen > 0 and book.seen[first_unseen - 1].index > last_assistant_at:
        first_unseen -= 1
    keep_from = max(0, first_unseen - max(0, keep_recent))
    held = sum(r.free for r in book.seen[keep_from:first_unseen])
    floor = max(0, keep_from - KEEP_SCAN)
    while keep_from > floor and held + book.seen[keep_from - 1].free <= keep_tokens:
        keep_from -= 1
        held += book.seen[keep_from].free
    if keep_from >= book.keep_from:
        book.freeable += sum(r.free for r in book.seen[book.keep_from:keep_from] if not r.cleared)
        book.keep_from = keep_from
    else:
        book.keep_from = keep_from
        book.refresh_freeable()
    return first_unseen


def time_gap_seconds(ctx: LayerContext) -> float:
    """The time-based trigger's gap: the configured minutes, or the cache TTL when unset."""
    minutes = ctx.config.time_gap_minutes
    return ttl_seconds(ctx.config.cache_ttl) if minutes is None else minutes * 60


def _choose(book: Book, entries: list[Entry], ctx: LayerContext, la: int,
            first_unseen: int) -> tuple[list[Seen], str, ce.Verdict | None]:
    """The results to clear, why, and the cache verdict: time (the cache expired) first, else count."""
    cfg = ctx.config
    if cfg.time_based_enabled and la >= 0 and ctx.now - entries[la].timestamp > time_gap_seconds(ctx):
        keep_from = max(0, first_unseen - max(1, cfg.time_keep_recent))
        targets = [r for r in book.seen[:keep_from] if not r.cleared and r.free > 0]
        if targets:
            return targets, "time", _judge(entries, ctx, targets)
    e_win = ctx.budget.effective_window
    if (cfg.micro_count_enabled and ctx.tokens >= cfg.micro_trigger_ratio * e_win and book.freeable > 0
            and book.freeable >= cfg.micro_clear_at_least_ratio * e_win):
        targets = [r for r in book.seen[:book.keep_from] if not r.cleared and r.free > 0]
        if not targets:
            return [], "auto", None
        verdict = _judge(entries, ctx, targets)
        if cfg.cache_aware and not verdict.act:
            return [], "auto", verdict
        return targets, "auto", verdict
    return [], "auto", None


def _judge(entries: list[Entry], ctx: LayerContext, targets: list[Seen]) -> ce.Verdict:
    """The cache verdict for clearing `targets`: only results the request shows count — one that
    context collapse already shows as a digest changes nothing that is sent, and frees nothing."""
    hidden = collapsed_ranges(entries, ctx.state)
    shown = [r for r in targets if not any(a <= r.index < b for a, b in hidden)] if hidden else targets
    if not shown:
        return ce.verdict(warm_tokens=0, readable_tokens=0, freed=0, tokens_now=ctx.tokens,
                          threshold=ctx.budget.autocompact_threshold, rates=ctx.config.cache_rates,
                          ttl=ctx.config.cache_ttl, growth=0.0)
    freed = sum(r.free for r in shown)
    task_from = ce.latest_prompt(entries)
    lost = ce.reread_of([(r.free, r.tool, r.index >= task_from) for r in shown],
                        after_tokens=max(0, ctx.tokens - freed), rates=ctx.config.cache_rates, ttl=ctx.config.cache_ttl)
    return ce.judge(entries, ctx, shown[0].index, freed, lost=lost)


def _clear(entries: list[Entry],
           targets: list[Seen]) -> tuple[dict[int, list[dict[str, Any]]], dict[int, int], int, bool]:
    """Put placeholders in: the new content per entry index, the token delta per index, the
    tokens freed, and whether a record no longer matched the history (stale)."""
    replaced: dict[int, list[dict[str, Any]]] = {}
    deltas: dict[int, int] = {}
    freed = 0
    stale = False
    for r in targets:
        i = r.index
        if i >= len(entries) or entries[i].uuid != r.uuid:
            stale = True
            continue
        blocks = replaced.setdefault(i, list(entries[i].content))
        for j, b in enumerate(blocks):
            if b.get("type") == "tool_result" and b.get("tool_use_id") == r.tool_use_id:
                nb = {**b, "content": placeholder(r.tool)}
                d = block_tokens(nb) - block_tokens(b)
                blocks[j] = nb
                deltas[i] = deltas.get(i, 0) + d
                freed -= d
                break
        r.cleared = True
    return replaced, deltas, freed, stale


def _drop_settled(book: Book) -> None:
    """Forget settled records at the front of the part outside the keep window (each once)."""
    k = 0
    while k < book.keep_from and (book.seen[k].cleared or book.seen[k].free == 0):
        k += 1
    if k:
        del book.seen[:k]
        book.keep_from -= k
