"""Layer 4, context collapse (CC `contextCollapse`): a read-time projection.

When the count is at or above `collapse_commit_ratio` of the effective window, old spans of
`collapse_span_rounds` API rounds (never the head round, never the recent tail, never the round
with the usage anchor) are committed to a collapse store in the layer state, keyed by the span's
first and last entry uuid, each with a deterministic digest built from the entries — every user
message verbatim (a very long one by its head and tail), which files were read / written / edited,
which commands ran and how they ended — no model involved. Commits go oldest first until the
view is at most `collapse_target_ratio`.

The working history is never changed: `apply` returns the *view* (spans replaced by their digest
entries), which the pipeline projects into the request. Every later turn replays the store, so a
committed span stays collapsed (a stable prefix for the prompt cache). A span whose entries are
gone (snipped, summarised) is dropped from the store.

Accounting: a usage anchor that predates a commit still counts the span in full, so the view's
anchor is shifted by digest − span tokens; once a response arrives after the commit, its usage
already reflects the view and no shift is made.

Cache: committing a new span changes the request from that span on, so the prompt cache's copy
of everything after it is written again on the next call. With `cache_aware` (the default) new
spans are committed only on a favourable verdict (compaction/cache_economics.py: cache cold, the
count at or about to cross the auto-compact threshold — whatever the rewrite costs, since a digest
keeps every user instruction verbatim where a summary keeps only the recent ones, as long as the
commit gets the view down to `collapse_target_ratio` — or a rewrite that pays back); a verdict to
wait backs off like an empty commit, until the cache goes cold, the count nears the threshold or
grows. A commit on a warm cache goes down to `collapse_warm_target_ratio` instead of
`collapse_target_ratio`, so each rewrite buys more room and they come less often (measured:
bench/cache_fake_server.py). Replaying committed spans never changes the request (digests are byte-identical), so it
costs nothing. A commit's report says what it cost and should save (`details["cache"]`).

Cost: spans are located by index hints checked in O(1); only a commit walks the rounds, and a
commit that found nothing (or was told to wait) backs off until the count grows.
"""
from __future__ import annotations

import dataclasses
import re
from typing import Any, Sequence

from compaction import cache_economics as ce
from compaction.entry import Entry
from compaction.layerkit import runtime, tail_round
from compaction.layer_context import LayerContext, PipelineConfig
from compaction.report import CompactionReport, LayerResult
from compaction.rounds import round_starts
from compaction.accounting.tokens import Calibration, adjust_anchor, anchor_index, count_tokens, usage_total

Located = tuple[int, int, dict[str, Any]]   # a committed span found in the history: (start, end, span)

NAME = "collapse"
LONG_USER_CHARS = 4_000     # a user message longer than this is kept by its head and tail
USER_HEAD_CHARS = 2_500
USER_TAIL_CHARS = 1_000
RETRY_GROWTH_RATIO = 0.05
_EXIT = re.compile(r"exit code:?\s*(-?\d+)", re.IGNORECASE)


# ----- digests -----------------------------------------------------------------------------------


def _short(s: str, n: int) -> str:
    s = " ".join(str(s).split())
    return s if len(s) <= n else s[: n - 1] + "…"


def _result_status(b: dict[str, Any]) -> str:
    c = b.get("content", "")
    text = c if isinstance(c, str) else " ".join(x.get("text", "") for x in c if isinstance(x, dict))
    m = _EXIT.findall(text[-300:])
    if m:
        return f"exit {m[-1]}"
    return "error" if b.get("is_error") else ""


def head_and_tail(text: str, where: str) -> str:
    """`text` word for word, or a very long one (over LONG_USER_CHARS) by its head and tail with
    `where` the whole of it stays: the one way collapse, session memory and the summary retry quote
    a user's message."""
    if len(text) <= LONG_USER_CHARS:
        return text
    omitted = len(text) - USER_HEAD_CHARS - USER_TAIL_CHARS
    return f"{text[:USER_HEAD_CHARS]} […{omitted:,} characters left out here; {where}…] {text[-USER_TAIL_CHARS:]}"


def quote_user(text: str) -> str:
    """A user message as the digest keeps it, in quotes (`head_and_tail`)."""
    return f"“{head_and_tail(str(text).strip(), 'the whole message is in the session log and the transcript browser')}”"


def digest(span: Sequence[Entry], first_round: int, last_round: int, max_chars: int = 600) -> str:
    """What a span of rounds did, from the entries alone (deterministic): every user message
    verbatim (a very long one by its head and tail), then the files read / written / edited, the
    commands run and how they ended, and what the assistant said first — that part cut to
    `max_chars`; the user's words never are."""
    status: dict[str | None, str] = {}   # by tool_use_id (None: a result that names none)
    for e in span:
        for b in e.content:
            if b.get("type") == "tool_result":
                status[b.get("tool_use_id")] = _result_status(b)
    asked: list[str] = []
    groups: dict[str, list[str]] = {"read": [], "wrote": [], "edited": [], "ran": [], "searched": [], "used": []}
    said: list[str] = []
    for e in span:
        for b in e.content:
            t = b.get("type")
            if t == "text" and e.role == "user" and e.sent and e.kind == "message":
                if str(b.get("text", "")).strip():
                    asked.append(quote_user(b.get("text", "")))
            elif t == "text" and e.role == "assistant" and not said:
                said.append(f"“{_short(b.get('text', ''), 60)}”")
            elif t == "tool_use":
                name, inp = b.get("name", "?"), b.get("input") or {}
                st = status.get(b.get("id"), "")
                suffix = f" ({st})" if st else ""
                if name == "read_file":
                    groups["read"].append(_short(inp.get("path", "?"), 200) + suffix)
                elif name == "write_file":
                    groups["wrote"].append(_short(inp.get("path", "?"), 200) + suffix)
                elif name == "edit_file":
                    groups["edited"].append(_short(inp.get("path", "?"), 200) + suffix)
                elif name == "bash":
                    groups["ran"].append(f"`{_short(inp.get('command', '?'), 120)}`{suffix}")
                elif name in ("grep", "glob"):
                    groups["searched"].append(f"{name} {_short(inp.get('pattern', '?'), 40)}{suffix}")
                else:
                    groups["used"].append(name + suffix)
    parts = []
    for verb, items in groups.items():
        if items:
            parts.append(f"{verb} " + ", ".join(dict.fromkeys(items)))
    if said:
        parts.append("assistant said " + said[0])
    n = sum(1 for e in span if e.sent)
    rounds = f"round {first_round}" if first_round == last_round else f"rounds {first_round}–{last_round}"
    head = f"[collapsed {rounds} ({n} messages)"
    body = "; ".join(parts)
    room = max(0, max_chars - len(head) - 3)
    if len(body) > room:
        body = body[: max(0, room - 1)] + "…"
    if asked:   # outside the cap: the user's instructions are what a digest must not lose
        said_user = "user asked " + ", ".join(dict.fromkeys(asked))
        body = f"{said_user}; {body}" if body else said_user
    return f"{head}: {body}]" if body else head + "]"


def digest_entry(span: dict[str, Any]) -> Entry:
    return Entry({"role": "user", "content": [{"type": "text", "text": span["digest"]}]}, kind="summary",
                 uuid=f"collapse-{span['first']}", timestamp=span.get("ts", 0.0),
                 meta={"collapse": True, "first": span["first"], "last": span["last"]})


# ----- locating committed spans -------------------------------------------------------------------


def _locate(entries: list[Entry], spans: list[dict[str, Any]]) -> list[Located]:
    """(start, end exclusive, span) for each stored span still present; spans that are gone are
    removed from the store. Index hints make this O(spans); a miss rebuilds them once."""
    located: list[Located] = []
    index: dict[str, int] | None = None
    keep: list[dict[str, Any]] = []
    for sp in spans:
        h, n = sp.get("hint", -1), sp.get("n", 0)
        if not (0 <= h and h + n <= len(entries) and n > 0 and entries[h].uuid == sp["first"]
                and entries[h + n - 1].uuid == sp["last"]):
            if index is None:
                index = {e.uuid: i for i, e in enumerate(entries)}
            a, b = index.get(sp["first"]), index.get(sp["last"])
            if a is None or b is None or b < a:
                continue
            sp["hint"], sp["n"] = a, b - a + 1
        keep.append(sp)
        located.append((sp["hint"], sp["hint"] + sp["n"], sp))
    if len(keep) != len(spans):
        spans[:] = keep
    located.sort(key=lambda x: x[0])
    out: list[Located] = []
    for a, b, sp in located:  # overlapping spans cannot be both applied: keep the earlier
        if out and a < out[-1][1]:
            continue
        out.append((a, b, sp))
    return out


def _view(entries: list[Entry], located: list[Located], rt: dict[str, Any]) -> list[Entry]:
    cache: dict[str, Any] = rt.setdefault("digests", {})
    view: list[Entry] = []
    pos = 0
    for a, b, sp in located:
        d = cache.get(sp["first"])
        if d is None or d.text() != sp["digest"]:
            d = cache[sp["first"]] = digest_entry(sp)
        view += entries[pos:a]
        view.append(d)
        pos = b
    view += entries[pos:]
    return view


def _applicable(entries: list[Entry], x: Located, ai: int | None,
                anchor_uuid: str | None) -> bool:
    """A located span is shown collapsed unless it would hide the usage anchor, or — when the count
    is estimated for it (no anchor, or an anchor older than the commit) — its digest is no longer
    smaller than what it hides. Older spans cost nothing to check."""
    a, b, sp = x
    if ai is not None and a <= ai < b:
        return False
    if ai is None or sp.get("anchor") == anchor_uuid:
        return digest_entry(sp).tokens < sum(e.tokens for e in entries[a:b])
    return True


def _shift_for_new(entries: list[Entry], view: list[Entry], located: list[Located], anchor_uuid: str | None,
                   overhead: int = 0, cal: Calibration | None = None) -> list[Entry]:
    """Shift the view's anchor for spans committed since that anchor's response (see module doc).
    The anchor holds real tokens and the spans are estimated: with a calibration (`cal`) the count
    scales the shift itself (answers weighted at their own rate); without one it is scaled here by
    how the anchor's usage compares with the estimate of what it answered (`_real_per_estimate`)."""
    if anchor_uuid is None:
        return view
    size = (cal or Calibration()).weighted
    delta = 0
    for a, b, sp in located:
        if sp.get("anchor") == anchor_uuid:
            delta += round(digest_entry(sp).tokens - size(entries[a:b]))
    if delta and cal is None:
        delta = round(delta * _real_per_estimate(view, overhead, delta))
    return adjust_anchor(view, delta, upto=0) if delta else view


def _cal(cfg: PipelineConfig) -> Calibration | None:
    """The config's calibration, or None when there is none (then `_real_per_estimate` scales)."""
    return cfg.count_ratio if cfg.calibration is not None else None


def _real_per_estimate(view: list[Entry], overhead: int, delta: int) -> float:
    """Real tokens per estimated token in the request the usage anchor answered — its usage (with
    what layers freed since) against the overhead and the estimates up to it in that request: the
    view, with the spans committed since (`delta`) still in full — kept within [0.5, 2].
    O(entries); runs only while a span committed since the anchor's response is shown."""
    ai = anchor_index(view)
    if ai is None:
        return 1.0
    a = view[ai]
    real = usage_total(a.usage) + int(a.meta.get("usage_adjust", 0))
    est = overhead + sum(e.tokens for e in view[:ai + 1]) - delta
    if real <= 0 or est <= 0:
        return 1.0
    return min(2.0, max(0.5, real / est))


# ----- committing ---------------------------------------------------------------------------------


def _commit(entries: list[Entry], located: list[Located], ctx: LayerContext, view_tokens: int, anchor_uuid: str | None,
            now: float, target_ratio: float) -> list[dict[str, Any]]:
    cfg = ctx.config
    e_win = ctx.budget.effective_window
    starts = round_starts(entries)
    if entries[0].role != "user" or len(starts) < 3:
        return []
    tail_r = tail_round(entries, starts, int(cfg.collapse_keep_recent_ratio * e_win), cfg.collapse_keep_recent_rounds)
    covered = sorted((a, b) for a, b, _ in located)
    ci = 0  # first covered span that may still contain a later round (rounds go up)
    target = target_ratio * e_win
    size = max(1, cfg.collapse_span_rounds)
    bounds = starts + [len(entries)]
    new: list[dict[str, Any]] = []
    run: list[int] = []  # consecutive eligible round numbers

    def inside(r: int) -> bool:
        nonlocal ci
        while ci < len(covered) and covered[ci][1] <= starts[r]:
            ci += 1
        return ci < len(covered) and covered[ci][0] <= starts[r]

    def flush() -> None:
        nonlocal view_tokens
        while run and view_tokens > target:
            chunk, run[:] = run[:size], run[size:]
            a, b = bounds[chunk[0]], bounds[chunk[-1] + 1]
            span_entries = entries[a:b]
            sp = {"first": span_entries[0].uuid, "last": span_entries[-1].uuid,
                  "digest": digest(span_entries, chunk[0], chunk[-1], cfg.collapse_digest_chars),
                  "hint": a, "n": b - a, "anchor": anchor_uuid, "ts": span_entries[0].timestamp,
                  "committed_at": now}
            freed = sum(e.tokens for e in span_entries) - digest_entry(sp).tokens
            if freed <= 0:
                continue
            new.append(sp)
            view_tokens -= freed

    for r in range(1, tail_r):
        if view_tokens <= target:
            break
        if inside(r):
            flush()
            run.clear()
            continue
        run.append(r)
        if len(run) >= size:
            flush()
    flush()
    return new


def _cached_view(rt: dict[str, Any], entries: list[Entry], spans: list[dict[str, Any]]) -> list[Entry] | None:
    """The previous view grown by the entries appended since, when the working history is the same
    list object grown by appends (the loop's contract) and the store did not change; else None."""
    c = rt.get("view")
    if not c or c["src"] is not entries or c["spans"] is not spans or c["nspans"] != len(spans):
        return None
    n = c["src_len"]
    if len(entries) < n or entries[n - 1] is not c["src_last"]:
        return None
    view: list[Entry] = c["view"]
    view += entries[n:]
    c["src_len"], c["src_last"] = len(entries), entries[-1]
    return view


def _build_view(entries: list[Entry], spans: list[dict[str, Any]], rt: dict[str, Any], ai: int | None,
                anchor_uuid: str | None, overhead: int = 0, cal: Calibration | None = None) -> list[Entry]:
    located = [x for x in _locate(entries, spans) if _applicable(entries, x, ai, anchor_uuid)]
    if not located:
        rt.pop("view", None)
        return entries
    view = _shift_for_new(entries, _view(entries, located, rt), located, anchor_uuid, overhead, cal)
    # cache it (a list of our own, grown in place later) unless the count is estimated for some
    # span: then applicability is re-checked every turn
    if ai is not None and not any(sp.get("anchor") == anchor_uuid for _, _, sp in located):
        rt["view"] = {"view": view, "src": entries, "src_len": len(entries), "src_last": entries[-1],
                      "spans": spans, "nspans": len(spans)}
    else:
        rt.pop("view", None)
    return view


def apply(entries: list[Entry], ctx: LayerContext) -> LayerResult:
    cfg = ctx.config
    if not cfg.collapse_enabled or not entries:
        return LayerResult(entries)
    st = ctx.state.of(NAME)
    spans: list[dict[str, Any]] = st.setdefault("spans", [])
    e_win = ctx.budget.effective_window
    commit_at = cfg.collapse_commit_ratio * e_win
    if not spans and (ctx.tokens < commit_at or ctx.replay_only):
        if not ctx.replay_only:
            st.pop("retry_at", None)
        return LayerResult(entries)
    rt = runtime(ctx.state, NAME)
    ai = anchor_index(entries)
    anchor_uuid = entries[ai].uuid if ai is not None else None
    view = entries
    if spans:
        cached = _cached_view(rt, entries, spans)
        if cached is None:
            cached = _build_view(entries, spans, rt, ai, anchor_uuid, cfg.overhead_tokens, _cal(cfg))
        view = cached
    tokens = count_tokens(view, cfg.overhead_tokens, cfg.count_ratio) if spans else ctx.tokens
    if tokens < commit_at:
        st.pop("retry_at", None)
        return LayerResult(view)
    if tokens < st.get("retry_at", 0) or ctx.replay_only:
        return LayerResult(view)
    here = dataclasses.replace(ctx, tokens=tokens)
    if cfg.cache_aware and tokens < rt.get("wait_below", 0) and not ce.is_cold(entries, here):
        return LayerResult(view)
    located = _locate(entries, spans) if spans else []
    cold = ce.is_cold(entries, here)
    # a commit on a warm cache rewrites the prefix after the first span: make it one worth that
    ratio = cfg.collapse_target_ratio if cold or not cfg.cache_aware else min(cfg.collapse_target_ratio,
                                                                               cfg.collapse_warm_target_ratio)
    new = _commit(entries, located, ctx, tokens, anchor_uuid, ctx.now, ratio)
    if not new:
        st["retry_at"] = tokens + RETRY_GROWTH_RATIO * e_win
        return LayerResult(view)
    freed = sum(sum(e.tokens for e in entries[sp["hint"]:sp["hint"] + sp["n"]]) - digest_entry(sp).tokens
                for sp in new)
    # it stands in for a summary only when it makes real room (down to its usual target); a commit
    # that frees a sliver near the threshold would rewrite the prefix again a call or two later
    enough = tokens - freed <= cfg.collapse_target_ratio * e_win
    verdict = ce.judge(entries, here, min(sp["hint"] for sp in new), max(0, freed), prevent_summary=enough)
    if cfg.cache_aware and not verdict.act:
        # wait until the count is one call from the threshold, or has grown, or the cache is cold
        growth = ce.growth_per_call(entries, here)
        rt["wait_below"] = min(ctx.budget.autocompact_threshold - growth, tokens + RETRY_GROWTH_RATIO * e_win)
        return LayerResult(view)
    rt.pop("wait_below", None)
    ce.note_rewrite(entries, here, min(sp["hint"] for sp in new))
    st.pop("retry_at", None)
    spans.extend(new)
    spans.sort(key=lambda sp: sp["hint"])
    view = _build_view(entries, spans, rt, ai, anchor_uuid, cfg.overhead_tokens, _cal(cfg))
    after = count_tokens(view, cfg.overhead_tokens, cfg.count_ratio)
    what = ", ".join(sp["digest"].split(" (")[0].removeprefix("[collapsed ") for sp in new)
    report = CompactionReport(layer=NAME, trigger=ctx.trigger,
                              action=f"collapsed {what} into digests (request view only; history kept); "
                                     f"{ce.describe(verdict)}",
                              tokens_before=ctx.tokens, tokens_after=after,
                              details={"spans": len(new), "spans_total": len(spans), "cache": verdict.details()})
    return LayerResult(view, report)
