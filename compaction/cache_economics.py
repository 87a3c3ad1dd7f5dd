"""When rewriting the cached prefix pays: the one decision rule of every prefix-rewriting layer.

The model of the prompt cache. The last request left its prefix in the prompt cache; it stays warm
until `ttl` after that request (refreshed by each hit). A layer that changes the history at a
point inside that prefix makes the next call read less and write more. Let

    R0  cached tokens the next call would read if the layer did nothing (the warm prefix T, or
        where an earlier rewrite this turn already broke it, or 0 when the cache is cold),
    R1  cached tokens it reads if the layer acts: the part before the change still warm (≤ R0),
    x   tokens the layer frees, all after R1,
    r,w dollars per token of a cache read and of a cache write (1.25× input for 5m, 2× for 1h).

Everything after R0 is written by both choices, so only [R1, R0) differs on the next call:
doing nothing reads it (R0 − R1)·r; acting writes what is left of it, (R0 − R1 − x)·w. So

    cost (extra dollars of the next call) = (R0 − R1 − x)·w − (R0 − R1)·r

(negative when x is most of what is rewritten — then acting pays at once). Every later call,
as long as the prefix lives, reads x tokens fewer: it saves x·r. The prefix lives until a summary
discards it: `calls_ahead` = the room left to the auto-compact threshold after acting, over the
growth per call, capped. Cold cache: R0 = R1 = 0, so cost = −x·w (the rewrite is free and the
next call writes x fewer tokens).

Freeing x also puts the next summary off: a summary costs S dollars (its call reads the shared
prefix, writes its prompt, pays its output, and the call after it writes the new, short prefix)
and takes away F tokens of growth, so x tokens freed are worth S·x/F of summaries.

The rule: act when the cache is cold; otherwise when MARGIN·cost ≤ saves·calls_ahead + S·x/F. The
reason is `prevents_summary` when the count is at the auto-compact threshold (or would cross it
on the next call at the current growth) and acting brings it below, else `pays`; otherwise
`waits`. Measured on a generated session (bench/cache_cost.py), acting at the threshold whatever
the rewrite costs — what a token-only engine does — spends more than the summaries it puts off
once the summary call reads the cached prefix: at a 20,000 window a near-full prefix is rewritten
every call or two to free one result. `always_prevent_summary=True` restores that behaviour.

A layer gets all of this through `judge(entries, ctx, changed_at, freed)`: the warm prefix is the
last response's request (its usage), cold is the gap since that response against the TTL, the
readable part is found by looking back at most `LOOKBACK` blocks from the end (ctxtui marks the
system prompt, the tools and the last message; deeper than that, only the system prompt and tools
are read), and the growth is a running mean kept per process. O(new entries) per call.
"""
from __future__ import annotations

import math
import os

from dataclasses import dataclass
from typing import Any, Collection, Sequence

from compaction.accounting.cache_model import LOOKBACK, MIN_CACHEABLE, Rates, ttl_seconds
from compaction.entry import Entry
from compaction.layer_context import LayerContext
from compaction.layerkit import runtime
from compaction.accounting.tokens import anchor_index

CALLS_AHEAD_CAP = 50      # a saving further out than this is not counted (sessions end, plans change)
SUMMARY_OUTPUT_SHARE = 0.03   # a summary's output, as a share of the threshold (at least MIN_SUMMARY_OUTPUT) ...
MIN_SUMMARY_OUTPUT = 1_500
SUMMARY_KEEPS_SHARE = 0.15    # ... and what the history keeps besides it (recent user messages, files, tail)
SUMMARY_PROMPT_TOKENS = 1_000
MARGIN = 3.0                  # the benefit must be this many times the cost: it is an estimate over calls that
                              # may never come (the user stops, a summary comes sooner); 3 measured best
GROWTH_SMOOTHING = 0.3    # weight of the newest call in the running mean of growth per call
REASONS = ("cold", "prevents_summary", "pays", "waits")
NAME = "cache"


@dataclass(frozen=True)
class Verdict:
    """What rewriting the cached prefix now would cost and save, and whether to do it."""
    act: bool
    reason: str                 # one of REASONS
    rewrite_tokens: int         # cached tokens the next call writes instead of reading (0 when cold)
    cost_usd: float             # extra dollars on the next call (≤ 0: free or paying at once)
    saves_per_call_usd: float   # dollars each later call saves
    payback_calls: float | None  # later calls until the saving covers the cost; None: never (nothing saved)
    calls_ahead: int = 0        # calls the prefix is expected to live
    reread_usd: float = 0.0     # expected dollars of reading again what it removes (`reread_estimate`)
    lost_tokens: int = 0        # tokens of tool results it removes that the agent may need again

    def details(self) -> dict[str, Any]:
        """The `details["cache"]` of a compaction report (plain JSON)."""
        out = {"reason": self.reason, "rewrite_tokens": self.rewrite_tokens, "cost_usd": round(self.cost_usd, 6),
               "saves_per_call_usd": round(self.saves_per_call_usd, 6),
               "payback_calls": None if self.payback_calls is None else round(self.payback_calls, 1)}
        if self.lost_tokens:
            out.update(calls_ahead=self.calls_ahead, reread_usd=round(self.reread_usd, 6),
                       lost_tokens=self.lost_tokens)
        return out


def calls_ahead(*, tokens_now: int, freed: int, threshold: int, growth: float, cap: int = CALLS_AHEAD_CAP) -> int:
    """How many calls the prefix would live before a summary discards it: the room left to the
    threshold once `freed` tokens are gone, over the growth per call; at most `cap`."""
    room = threshold - (tokens_now - freed)
    if room <= 0:
        return 0
    if growth <= 0:
        return cap
    return min(cap, int(room // growth))


def summary_estimate(threshold: int, rates: Rates, ttl: str | float, cheap: bool = False) -> tuple[float, int]:
    """(dollars, tokens it takes away) of one summary at the threshold: its call reads the cached
    prefix and writes its prompt, its output is priced as output, and the next call writes the new
    history (the summary and what is kept) to the cache. `cheap`: the summary is the session notes
    (no model call), so only the new history's write is paid."""
    out = max(MIN_SUMMARY_OUTPUT, int(SUMMARY_OUTPUT_SHARE * threshold))
    after = out + int(SUMMARY_KEEPS_SHARE * threshold)
    usd = after * rates.write(ttl)
    if not cheap:
        usd += threshold * rates.cache_read + SUMMARY_PROMPT_TOKENS * rates.write(ttl) + out * rates.output
    return usd, max(1, threshold - after)


def verdict(*, warm_tokens: int, readable_tokens: int, freed: int, tokens_now: int, threshold: int,
            rates: Rates, ttl: str | float, growth: float, cold: bool = False,
            summary_usd: float = 0.0, summary_frees: int = 0, always_prevent_summary: bool = False,
            cap: int = CALLS_AHEAD_CAP, lost: Reread | None = None) -> Verdict:
    """The rule in the module docstring. `warm_tokens` is R0, `readable_tokens` R1 (clamped to
    R0), `freed` x, `tokens_now` the count before acting, `growth` tokens added per call,
    `summary_usd` and `summary_frees` S and F (0: summaries not counted), `lost` what the agent is
    expected to read again (a cost beside the rewrite's; on a cold cache too)."""
    lost = lost or Reread()
    if min(warm_tokens, readable_tokens, freed, tokens_now, summary_frees) < 0 or summary_usd < 0:
        raise ValueError("token and dollar figures must be >= 0")
    r0 = 0 if cold else warm_tokens
    r1 = min(readable_tokens, r0)
    w, r = rates.write(ttl), rates.cache_read
    rewrite = max(0, r0 - r1 - freed)
    cost = (r0 - r1 - freed) * w - (r0 - r1) * r
    saves = freed * r
    payback = 0.0 if cost <= 0 else (cost / saves if saves > 0 else None)
    ahead = calls_ahead(tokens_now=tokens_now, freed=freed, threshold=threshold, growth=growth, cap=cap)
    deferral = summary_usd * freed / summary_frees if summary_frees > 0 else 0.0
    at_threshold = tokens_now + max(0.0, growth) >= threshold and tokens_now - freed < threshold
    # At the threshold the alternative is a summary, which loses more than any cheap layer: what
    # this one loses is charged only against doing nothing (reported either way).
    charge = 0.0 if at_threshold else lost.usd
    if cold or r0 == 0:
        reason = "cold" if cost + charge <= saves * ahead + deferral else "waits"
    elif cost * MARGIN + charge <= saves * ahead + deferral or (at_threshold and always_prevent_summary):
        reason = "prevents_summary" if at_threshold else "pays"
    else:
        reason = "waits"
    act = reason != "waits" and freed > 0
    return Verdict(act, reason if act else "waits", rewrite, cost, saves, payback, ahead, lost.usd, lost.tokens)


# ----- human wording -------------------------------------------------------------------------------


def _tokens(n: int) -> str:
    return f"{n / 1000:.0f}k" if n >= 10_000 else (f"{n / 1000:.1f}k" if n >= 1_000 else f"{n:,}")


def _usd(v: float) -> str:
    """Cents for a dollar or more, else two significant digits: $1.23, $0.17, $0.006, $0.0075."""
    v = abs(v)
    if v >= 1:
        return f"${v:.2f}"
    if v < 0.0001:
        return "under $0.0001"
    return f"${v:.2g}"


def describe(v: Verdict) -> str:
    """The clause a report's action ends with: "rewrote 48k cached tokens, $0.17; saves $0.006 per
    call" — or "cache cold: rewrite free; ..." — and why it acted when that is not plain."""
    saves = f"saves {_usd(v.saves_per_call_usd)} per call"
    if v.reason == "cold":
        return f"cache cold: rewrite free; {saves}{_rereads(v)}"
    if v.cost_usd <= 0:
        head = f"rewrote {_tokens(v.rewrite_tokens)} cached tokens, cheaper than not at once ({_usd(v.cost_usd)} less)"
    else:
        head = f"rewrote {_tokens(v.rewrite_tokens)} cached tokens, {_usd(v.cost_usd)}"
    why = {"prevents_summary": "; keeps the count under the auto-compact threshold",
           "pays": _payback(v.payback_calls)}.get(v.reason, "")
    return f"{head}; {saves}{why}{_rereads(v)}"


def _rereads(v: Verdict) -> str:
    """"; re-reads expected $0.012 (9.6k tokens of results)": the price of what it removes."""
    if not v.lost_tokens:
        return ""
    return "; " + reread_clause(v.reread_usd, v.lost_tokens)


def reread_clause(usd: float | None, tokens: int) -> str:
    """"re-reads expected $0.012 (9.6k tokens of results)": what a compaction is expected to make
    the agent read again, as `reread_estimate` priced it ("?" when the dollars are not known). The
    one wording of it: a layer's action, the inspector, the loss report and the preview all say it
    with this function."""
    return f"re-reads expected {'?' if usd is None else _usd(usd)} ({_tokens(tokens)} tokens of results)"


def reread_text(cache: Any) -> str:
    """`reread_clause` of a compaction's `details["cache"]` (`Verdict.details`: `reread_usd`,
    `lost_tokens`); "" when it priced no re-read or is not such a dict (a log is someone's JSON)."""
    if not isinstance(cache, dict):
        return ""
    lost, usd = cache.get("lost_tokens"), cache.get("reread_usd")
    if not isinstance(lost, int) or isinstance(lost, bool) or lost <= 0:
        return ""
    if not isinstance(usd, (int, float)) or isinstance(usd, bool) or not math.isfinite(usd) or usd < 0:
        return ""
    return reread_clause(float(usd), lost)


def _payback(calls: float | None) -> str:
    """Whole calls, rounded up (a saving that covers the cost part-way through a call has paid by
    its end): "pays back with the next call", "pays back in 3 calls"."""
    if not calls or calls <= 0:
        return ""
    n = math.ceil(calls - 1e-9)
    return "; pays back with the next call" if n <= 1 else f"; pays back in {n:,} calls"


# ----- from a history and a layer context ----------------------------------------------------------


def warm_prefix(entries: Sequence[Entry]) -> tuple[int | None, int, float]:
    """(index of the usage anchor, tokens its request held, when it answered): the prefix the last
    call left in the cache. (None, 0, 0.0) before any response."""
    ai = anchor_index(entries)
    if ai is None:
        return None, 0, 0.0
    u = entries[ai].usage or {}
    held = sum(int(u.get(k) or 0) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
    return ai, held, entries[ai].timestamp


def is_cold(entries: Sequence[Entry], ctx: LayerContext) -> bool:
    """True when nothing the last call cached can still be read: no response yet, or more than the
    TTL has passed since it (its request went out before it answered, so the entry is older)."""
    ai, _held, ts = warm_prefix(entries)
    return ai is None or ctx.now - ts > ttl_seconds(ctx.config.cache_ttl)


def readable_before(entries: Sequence[Entry], index: int, ctx: LayerContext) -> int:
    """Tokens of the cached prefix the next call can still read when entry `index` changes: the end
    of the latest earlier request before it, if the API's lookback (at most `LOOKBACK` blocks back
    from the request's last breakpoint) reaches it; else the system prompt and tools (their own
    breakpoint), when long enough to be cached at all. Walks back over at most LOOKBACK blocks."""
    overhead = ctx.config.overhead_tokens
    head = overhead if overhead >= MIN_CACHEABLE else 0
    blocks = 0
    after = 0   # tokens from the candidate cut to the end
    for k in range(len(entries) - 1, -1, -1):
        e = entries[k]
        if not e.sent:
            continue
        blocks += len(e.content)
        if blocks > LOOKBACK:
            return head
        after += e.tokens
        if k <= index and e.role == "assistant":   # the request that got this answer ended just before it
            prefix = ctx.tokens - after
            return max(head, prefix) if prefix >= MIN_CACHEABLE else head
    return head


def growth_per_call(entries: Sequence[Entry], ctx: LayerContext) -> float:
    """A running mean of the tokens each call adds (its answer, the results, the next prompt),
    sampled once per response: the anchor's output plus the estimates after it."""
    st = runtime(ctx.state, NAME)
    ai = anchor_index(entries)
    if ai is None:
        return float(st.get("growth", 0.0))
    uuid = entries[ai].uuid
    if st.get("growth_anchor") != uuid:
        a = entries[ai]
        sample = int((a.usage or {}).get("output_tokens") or 0) + sum(e.tokens for e in entries[ai + 1:])
        prev = st.get("growth")
        st["growth"] = float(sample) if prev is None else (1 - GROWTH_SMOOTHING) * prev + GROWTH_SMOOTHING * sample
        st["growth_anchor"] = uuid
    return float(st["growth"])


def judge(entries: Sequence[Entry], ctx: LayerContext, changed_at: int, freed: int,
          prevent_summary: bool = False, lost: Reread | None = None) -> Verdict:
    """The verdict for changing `entries` from index `changed_at` on, freeing `freed` tokens, with
    what earlier layers already rewrote this turn taken into account (`note_rewrite`).
    `prevent_summary`: at the threshold, act whenever that gets the count under it (a layer that
    is itself a better summary than the model's, like collapse, which keeps every instruction)."""
    ai, held, _ts = warm_prefix(entries)
    cold = is_cold(entries, ctx)
    st = runtime(ctx.state, NAME)
    warm = held
    if ai is not None and st.get("broken_anchor") == entries[ai].uuid:
        warm = min(warm, int(st.get("broken_at", warm)))
    readable = readable_before(entries, changed_at, ctx)
    cfg = ctx.config
    threshold = ctx.budget.autocompact_threshold
    s_usd, s_frees = (summary_estimate(threshold, cfg.cache_rates, cfg.cache_ttl, cheap=ctx.cheap_summary)
                      if ctx.summarizing else (0.0, 0))
    return verdict(warm_tokens=warm, readable_tokens=readable, freed=freed, tokens_now=ctx.tokens,
                   threshold=threshold, rates=cfg.cache_rates, ttl=cfg.cache_ttl,
                   growth=growth_per_call(entries, ctx), cold=cold, summary_usd=s_usd, summary_frees=s_frees,
                   always_prevent_summary=prevent_summary or cfg.always_prevent_summary, lost=lost)


def note_rewrite(entries: Sequence[Entry], ctx: LayerContext, changed_at: int) -> None:
    """Remember that the prefix the last call cached is broken from `changed_at` on, so a later
    layer this turn is charged only for what it breaks further (often nothing)."""
    ai, _held, _ts = warm_prefix(entries)
    if ai is None:
        return
    st = runtime(ctx.state, NAME)
    at = readable_before(entries, changed_at, ctx)
    if st.get("broken_anchor") == entries[ai].uuid:
        at = min(at, int(st.get("broken_at", at)))
    st["broken_anchor"], st["broken_at"] = entries[ai].uuid, at


# ----- what a compaction makes the agent read again ------------------------------------------------
#
# A result removed from the history is gone for the model; when it needs it again it calls the
# tool again: one more round trip, which reads the whole (compacted) context A from the cache and
# writes the result back, t tokens, plus the call the model writes. Charged at its probability:
# certain for what was read since the user's last prompt (the task at hand), likely for an older
# file read, unlikely for older command output.

REUSE_TASK = 1.0        # a result since the latest user prompt
REUSE_READ = 0.5        # an older file read (read again in the closed loop: facts asked 2-12 prompts later)
REUSE_OTHER = 0.1       # older command output, searches, listings
REREAD_CALL_TOKENS = 100    # the tool call the model writes to get it back
READ_TOOLS = frozenset({"read_file", "Read", "NotebookRead"})


@dataclass(frozen=True)
class Reread:
    usd: float = 0.0        # expected dollars
    tokens: int = 0         # tokens of the results removed that count (probability > 0)
    task_tokens: int = 0    # ... of them, read since the latest user prompt


def reread_estimate(removed: Sequence[Entry], task_from: int, *, after_tokens: int, rates: Rates,
                    ttl: str | float, restored: Collection[str] = ()) -> Reread:
    """The expected re-read cost of removing `removed` (history order); entries at index
    `task_from` or later belong to the current task; a read of a path in `restored` (re-attached
    whole by the compaction) is not lost."""
    names: dict[str, str] = {}
    paths: dict[str, str] = {}
    back = {os.path.normpath(p) for p in restored}
    lost: list[tuple[int, str, bool]] = []
    for i, e in enumerate(removed):
        for b in e.content:
            if b.get("type") == "tool_use":
                names[str(b.get("id"))] = str(b.get("name"))
                inp = b.get("input")
                if isinstance(inp, dict) and isinstance(inp.get("path"), str):
                    paths[str(b.get("id"))] = os.path.normpath(inp["path"])
        results = [b for b in e.content if b.get("type") == "tool_result"
                   and not (names.get(str(b.get("tool_use_id"))) in READ_TOOLS
                            and paths.get(str(b.get("tool_use_id"))) in back)]
        if not results:
            continue
        share = e.tokens // len(results)
        lost += [(share, names.get(str(b.get("tool_use_id")), ""), i >= task_from) for b in results]
    return reread_of(lost, after_tokens=after_tokens, rates=rates, ttl=ttl)


def reuse_odds(tool: str, in_task: bool) -> float:
    """How likely a removed result of `tool` is to be needed again."""
    if in_task:
        return REUSE_TASK
    return REUSE_READ if tool in READ_TOOLS else REUSE_OTHER


def reread_of(results: Sequence[tuple[int, str, bool]], *, after_tokens: int, rates: Rates,
              ttl: str | float) -> Reread:
    """`reread_estimate` for results given as (tokens, tool, in the current task)."""
    trip = after_tokens * rates.cache_read + REREAD_CALL_TOKENS * rates.output
    usd = sum(reuse_odds(tool, task) * (t * rates.write(ttl) + trip) for t, tool, task in results)
    return Reread(usd, sum(t for t, _, _ in results), sum(t for t, _, task in results if task))


def latest_prompt(entries: Sequence[Entry]) -> int:
    """The index of the newest user prompt (a user message with text), or len(entries) when there
    is none: where the current task starts. Scans back from the end, so a turn pays for its own rounds."""
    for i in range(len(entries) - 1, -1, -1):
        e = entries[i]
        if e.role == "user" and e.sent and e.kind == "message" and any(
                b.get("type") == "text" and str(b.get("text", "")).strip() for b in e.content):
            return i
    return len(entries)


# ----- a compaction that replaces the history (session memory) -------------------------------------
#
# A compaction that replaces the history by a short one (the session notes and a verbatim tail:
# no model call) at a context of C tokens leaves A, of which the head H (system prompt and tools)
# is still cached. Its next call writes A − H instead of reading what was warm, R0 − H, so
#
#     K = (A − H)·w − (R0 − H)·r  (+ the dollars of a model call, if any);  cold: K = (A − C)·w
#
# and every later call reads x = C − A fewer tokens: it saves x·r. If the engine compacts each time
# the context has grown x above what compaction leaves, a cycle lasts x/g calls (g: growth per
# call), and the dollars per call of reading plus compacting, r·(A + x/2) + K·g/x, are least at
# x* = sqrt(2·K·g/r) — the economic order quantity. So: act once K ≤ x·r · x/(2g), the saving per
# call over half a cycle. K < 0 (a cold cache, or a context over w/r ≈ 12.5× the compacted one)
# pays at once; on a cold cache it still waits until the context is at least `COLD_MIN_GAIN`× the
# compacted body larger, since every compaction turns older history into notes.

COLD_MIN_GAIN = 1.0   # cold cache: compact when x ≥ this × (A − H)
GROWTH_FLOOR = 0.01   # growth per call assumed at least this share of the effective window: the running
                      # mean starts from one sample (often just a prompt), which would make every
                      # saving look long-lived


def compaction_verdict(*, tokens_now: int, after_tokens: int, head_tokens: int, warm_tokens: int,
                       rates: Rates, ttl: str | float, growth: float, cold: bool, fixed_usd: float = 0.0,
                       cold_min_gain: float = COLD_MIN_GAIN, lost: Reread | None = None) -> Verdict:
    """The rule above: `tokens_now` C, `after_tokens` A, `head_tokens` H, `warm_tokens` R0 (what
    the last call cached), `growth` g, `fixed_usd` the compaction's own call (0 for notes),
    `lost` what the agent is expected to read again (`reread_estimate`): it counts as a cost, and
    a warm rewrite must pay MARGIN times over, as the other layers' must."""
    if min(tokens_now, after_tokens, head_tokens, warm_tokens) < 0 or fixed_usd < 0:
        raise ValueError("token and dollar figures must be >= 0")
    lost = lost or Reread()
    w, r = rates.write(ttl), rates.cache_read
    x = tokens_now - after_tokens
    body = max(0, after_tokens - head_tokens)
    r0 = 0 if cold else min(warm_tokens, tokens_now)
    if r0 <= head_tokens:
        cold = True
    if cold:
        cost = -x * w + fixed_usd
        rewrite = 0
    else:
        cost = body * w - (r0 - head_tokens) * r + fixed_usd
        rewrite = body
    saves = max(0, x) * r
    ahead = x / (2 * growth) if growth > 0 else float(CALLS_AHEAD_CAP)
    ahead = max(0.0, min(float(CALLS_AHEAD_CAP), ahead))
    payback = 0.0 if cost <= 0 else (cost / saves if saves > 0 else None)
    if x <= 0:
        act = False
    elif cold:
        act = x >= cold_min_gain * body and cost + lost.usd <= saves * ahead
    else:
        act = cost * MARGIN + lost.usd <= saves * ahead
    reason = ("cold" if cold else "pays") if act else "waits"
    return Verdict(act, reason, rewrite, cost, saves, payback, int(ahead), lost.usd, lost.tokens)


def judge_compaction(entries: Sequence[Entry], ctx: LayerContext, after_tokens: int,
                     fixed_usd: float = 0.0, lost: Reread | None = None) -> Verdict:
    """`compaction_verdict` for replacing `entries` (counted `ctx.tokens`) by a history counted
    `after_tokens`, losing `lost`."""
    _ai, held, _ts = warm_prefix(entries)
    cfg = ctx.config
    head = cfg.overhead_tokens if cfg.overhead_tokens >= MIN_CACHEABLE else 0
    return compaction_verdict(tokens_now=ctx.tokens, after_tokens=after_tokens, head_tokens=head,
                              warm_tokens=held, rates=cfg.cache_rates, ttl=cfg.cache_ttl,
                              growth=max(growth_per_call(entries, ctx), GROWTH_FLOOR * ctx.budget.effective_window),
                              cold=is_cold(entries, ctx), fixed_usd=fixed_usd, lost=lost)
