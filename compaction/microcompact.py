"""Layer 3, microcompact (CC `microCompact.ts`): clear old tool results in place.

Only results of `compactable_tools` (minus `preserved_tools`) that the model has already seen —
in entries before the last assistant message — are ever cleared; a result the model has not seen
is never touched. A cleared result keeps its tool pair and becomes `[Old result of <tool> cleared]`;
results of `micro_min_chars` or fewer characters, or whose placeholder would not be smaller, stay.

Two triggers:
- time-based (checked first): the gap between `ctx.now` and the last assistant message exceeds
  `time_gap_minutes` (60: the prompt cache has expired, so rewriting costs nothing extra) — clear
  every seen compactable result but the last `time_keep_recent` (at least 1).
- count-based: only when the count is at or above `micro_trigger_ratio` of the effective window
  (default half: below that the context is cheap and granular results are worth more), keep the
  last `micro_keep_recent` seen compactable results and clear the older ones — but only in a batch
  that frees at least `micro_clear_at_least_ratio` of the window (like the API's
  `clear_at_least`): a rewrite invalidates the cached prefix, so it must be worth the cache write.

Clearing rewrites the working history the loop adopts (and logs), so there is no persistent
state: the per-process records below are rebuilt by one scan after a resume or a snip.

Cost: results are registered once (per-process scan mark); a running sum of what could be freed
makes the batching test O(1); a clear touches only the pending results; settled records are
dropped from the front, so a turn costs O(new entries) amortized.
"""
from __future__ import annotations

from .entry import Entry
from .layerkit import (block_tokens, has_tool_results, mark_get, mark_set, result_chars, rewrite, runtime,
                       tool_uses_before)
from .pipeline import LayerContext
from .report import CompactionReport, LayerResult
from .tokens import count_tokens

NAME = "microcompact"

# record fields
TID, IDX, UUID, TOOL, FREE, CLEARED = range(6)


def placeholder(tool: str) -> str:
    return f"[Old result of {tool} cleared]"


def _freeable(b: dict, tool: str, min_chars: int) -> int:
    if result_chars(b) <= min_chars:
        return 0
    return max(0, block_tokens(b) - block_tokens({**b, "content": placeholder(tool)}))


def last_assistant(entries: list[Entry]) -> int:
    for i in range(len(entries) - 1, -1, -1):
        if entries[i].role == "assistant" and entries[i].sent:
            return i
    return -1


def _fresh(rt: dict) -> None:
    rt["records"], rt["p"], rt["cand"] = [], 0, 0


def apply(entries: list[Entry], ctx: LayerContext) -> LayerResult:
    cfg = ctx.config
    if not cfg.microcompact_enabled:
        return LayerResult(entries)
    rt = runtime(ctx.state, NAME)
    start = mark_get(rt, "seen", entries) + 1
    if start == 0 or "records" not in rt:
        start = 0
        _fresh(rt)
    records: list[list] = rt["records"]
    tools = cfg.compactable_tools - cfg.preserved_tools
    blocks_of: dict[int, list[dict]] = {}
    deltas: dict[int, int] = {}

    # 1. register results added since the last run
    for i in range(start, len(entries)):
        e = entries[i]
        if not has_tool_results(e):
            continue
        uses = tool_uses_before(entries, i)
        for j, b in enumerate(e.content):
            if b.get("type") != "tool_result":
                continue
            tid = b.get("tool_use_id")
            tool = uses.get(tid, {}).get("name")
            if tool not in tools:
                continue
            done = b.get("content") == placeholder(tool)
            records.append([tid, i, e.uuid, tool, 0 if done else _freeable(b, tool, cfg.micro_min_chars), done])

    # 2. which records the model has seen, and the count-based keep window
    la = last_assistant(entries)
    first_unseen = len(records)
    while first_unseen > 0 and records[first_unseen - 1][IDX] > la:
        first_unseen -= 1
    new_p = max(0, first_unseen - max(0, cfg.micro_keep_recent))
    if new_p >= rt["p"]:
        rt["cand"] += sum(r[FREE] for r in records[rt["p"]:new_p] if not r[CLEARED])
    else:
        rt["cand"] = sum(r[FREE] for r in records[:new_p] if not r[CLEARED])
    rt["p"] = new_p

    # 3. choose what to clear
    e_win = ctx.budget.effective_window
    targets: list[list] = []
    trigger = "auto"
    if cfg.time_based_enabled and la >= 0 and ctx.now - entries[la].timestamp > cfg.time_gap_minutes * 60:
        tp = max(0, first_unseen - max(1, cfg.time_keep_recent))
        targets = [r for r in records[:tp] if not r[CLEARED] and r[FREE] > 0]
        trigger = "time"
    if not targets:
        trigger = "auto"
        if (ctx.tokens >= cfg.micro_trigger_ratio * e_win and rt["cand"] > 0
                and rt["cand"] >= cfg.micro_clear_at_least_ratio * e_win):
            targets = [r for r in records[:new_p] if not r[CLEARED] and r[FREE] > 0]

    # 4. clear them
    freed_est = 0
    stale = False
    for r in targets:
        i = r[IDX]
        if i >= len(entries) or entries[i].uuid != r[UUID]:
            stale = True  # the list changed under the records: rebuild next run
            continue
        blocks = blocks_of.setdefault(i, list(entries[i].content))
        for j, b in enumerate(blocks):
            if b.get("type") == "tool_result" and b.get("tool_use_id") == r[TID]:
                nb = {**b, "content": placeholder(r[TOOL])}
                d = block_tokens(nb) - block_tokens(b)
                blocks[j] = nb
                deltas[i] = deltas.get(i, 0) + d
                freed_est -= d
                break
        r[CLEARED] = True
    if targets:
        rt["cand"] = sum(x[FREE] for x in records[:rt["p"]] if not x[CLEARED])

    # 5. drop settled records from the front of the window-free part (each record dropped once)
    k = 0
    while k < rt["p"] and (records[k][CLEARED] or records[k][FREE] == 0):
        k += 1
    if k:
        del records[:k]
        rt["p"] -= k

    out = rewrite(entries, {i: entries[i].with_content(bl) for i, bl in blocks_of.items()}, deltas) \
        if blocks_of else entries
    if stale:
        rt.pop("seen", None)
    else:
        mark_set(rt, "seen", out)
    if not blocks_of:
        return LayerResult(entries)
    n = len(targets)
    action = f"cleared {n} old tool result(s) the model had already seen (about {freed_est:,} tokens)"
    if trigger == "time":
        action += f"; {int((ctx.now - entries[la].timestamp) // 60)} min since the last response, cache expired"
    report = CompactionReport(layer=NAME, trigger=trigger, action=action, tokens_before=ctx.tokens,
                              tokens_after=count_tokens(out, cfg.overhead_tokens),
                              details={"cleared": n, "freed_estimate": freed_est})
    return LayerResult(out, report)
