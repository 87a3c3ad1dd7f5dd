"""Layer 2, snip (CC `snipCompactIfNeeded`): drop whole old API rounds from the middle.

The head (round 0: the first request, or what a summary left) and a recent tail of rounds are
kept; the oldest middle rounds go until the count is at most `snip_target_ratio` of the effective
window. The whole history is archived to a transcript first — if that write fails (or there is no
session folder) nothing is snipped — and a `snip_marker` user entry takes the rounds' place, saying
how much went and where the transcript is, and quoting every user prompt it removed word for word
(a very long one by its head and tail, as collapse's digests do): a snip drops work, never what
the user asked. Earlier markers are folded into the new one, their quotes first.

When: only at or above the trigger (default: the auto-compact threshold while automatic
summarizing cannot run — the no-model fallback; see `trigger_tokens`), with hysteresis — after a
snip (or a snip that found nothing to drop) it fires again only once the count has grown by
`snip_growth_ratio` of the window over the lowest count seen since. The tail always includes the
round holding the usage anchor, so everything removed lies before it and the anchor is shifted
by the estimated tokens freed: what the anchor's request held of the dropped rounds, where a round
collapse had shown as a digest held only the digest (`layerkit.held_by_anchor`). Cuts are at
round starts only, so no tool pair is split.

Cache: a snip rewrites the cached prefix from the head on. It is not held back by the cache rule
(compaction/cache_economics.py) — it runs only when nothing else can keep the session inside the
window — but its report says what the rewrite cost and should save (`details["cache"]`).

Cost: O(1) per turn unless it fires; firing is O(history) and rare (hysteresis).
"""
from __future__ import annotations

from typing import Any

from compaction import cache_economics as ce
from compaction.entry import Entry
from compaction.layerkit import held_by_anchor, tail_round
from compaction.layer_context import LayerContext
from compaction.layers.collapse import quote_user
from compaction.layers.ptl import is_retry_marker
from compaction.report import CompactionReport, LayerResult
from compaction.rounds import round_starts
from compaction.accounting.tokens import adjust_anchor, count_tokens
from compaction.transcript import transcript_path, transcripts_dir, write_transcript

NAME = "snip"
MARKER_ESTIMATE = 120  # tokens a marker costs, used while choosing rounds (checked exactly after)
PROMPTS_SHARE = 0.25   # the quoted prompts take at most this share of the effective window (about 4
                       # characters a token); past it the oldest stay only in the transcripts, so a
                       # thousand-prompt session's marker cannot outgrow the window


def trigger_tokens(ctx: LayerContext) -> int | None:
    """Where snip acts. By default it is the no-model fallback: at the auto-compact threshold, and
    only while automatic summarizing cannot run (no summarizer, or a breaker stopped it), so a
    session still stays inside the window without a summary. An explicit ratio makes it act first."""
    r = ctx.config.snip_trigger_ratio
    if r is not None:
        return int(r * ctx.budget.effective_window)
    return None if ctx.summarizing else ctx.budget.autocompact_threshold


def marker_text(rounds: int, messages: int, tokens: int, path: str, earlier: list[str],
                prompts: list[str] | None = None, left_out: int = 0) -> str:
    text = (f"[Snipped: {rounds} earlier API round(s) ({messages} messages, about {tokens:,} tokens) between "
            f"the first request and the recent turns were removed to free context. The full history before "
            f"the snip is archived at {path}")
    if earlier:
        text += "; earlier snips: " + ", ".join(earlier)
    text += ". Read it if you need details from that part."
    if prompts:
        text += " The user's messages in that part, word for word: " + "; ".join(prompts) + "."
    if left_out:
        text += f" {left_out:,} earlier message(s) of the user's are only in the transcripts."
    return text + "]"


def removed_prompts(gone: list[Entry]) -> list[str]:
    """The user's prompts among the entries a snip removes, quoted (not tool results, not the
    loop's own retry notes)."""
    out = []
    for e in gone:
        if e.role == "user" and e.sent and e.kind == "message" and not is_retry_marker(e):
            out += [quote_user(str(b.get("text", ""))) for b in e.content
                    if b.get("type") == "text" and str(b.get("text", "")).strip()]
    return out


def within_share(prompts: list[str], max_chars: int) -> list[str]:
    """The newest prompts whose quotes fit in `max_chars` (at least the newest one), oldest first."""
    kept: list[str] = []
    size = 0
    for p in reversed(prompts):
        if kept and size + len(p) > max_chars:
            break
        kept.append(p)
        size += len(p)
    return kept[::-1]


def _noop(entries: list[Entry], st: dict[str, Any], tokens: int) -> LayerResult:
    low = st.get("low_water")
    if low is not None and tokens < low:
        st["low_water"] = tokens
    return LayerResult(entries)


def apply(entries: list[Entry], ctx: LayerContext) -> LayerResult:
    cfg = ctx.config
    st = ctx.state.of(NAME)
    tokens = ctx.tokens
    e_win = ctx.budget.effective_window
    trigger = trigger_tokens(ctx)
    if not cfg.snip_enabled or trigger is None or tokens < trigger or ctx.session_dir is None or not entries:
        return _noop(entries, st, tokens)
    low = st.get("low_water")
    if low is not None and tokens < low + cfg.snip_growth_ratio * e_win:
        return _noop(entries, st, tokens)
    st["low_water"] = tokens  # back off until growth, whatever happens below

    starts = round_starts(entries)
    if entries[0].role != "user" or len(starts) < 3:
        return LayerResult(entries)
    head_end = starts[1]
    tail_r = tail_round(entries, starts, int(cfg.snip_keep_recent_ratio * e_win), cfg.snip_keep_recent_rounds)
    if tail_r < 2:
        return LayerResult(entries)

    head = entries[:head_end]
    old_markers = [e for e in head if e.kind == "snip_marker"]
    markers = sum(e.tokens for e in old_markers)
    target = int(cfg.snip_target_ratio * e_win)
    cal = cfg.count_ratio
    r = 1
    removed, held = markers, float(markers)  # estimated tokens of what goes; held: what the anchor's request held
    while r < tail_r and (r == 1 or tokens - round(cal.ratio * (held - MARKER_ESTIMATE)) > target):
        removed += sum(e.tokens for e in entries[starts[r]:starts[r + 1]])
        held = markers + held_by_anchor(entries, ctx.state, head_end, starts[r + 1], cal)
        r += 1
    cut_end = starts[r]  # entries[head_end:cut_end] go
    gone = entries[head_end:cut_end]

    last_uuid = entries[-1].uuid
    if st.get("archived_last") == last_uuid and st.get("archived_path"):
        path = st["archived_path"]  # nothing new since the last archive: do not write another
    elif ctx.dry_run:
        path = str(transcript_path(transcripts_dir(ctx.session_dir), "snip", ctx.now, reserve=False))
    else:
        try:
            path = str(write_transcript(transcripts_dir(ctx.session_dir), entries, "snip", now=ctx.now))
        except OSError:
            return LayerResult(entries)  # no archive, no snip
        st["archived_last"], st["archived_path"] = last_uuid, path

    prev = old_markers[-1].meta if old_markers else {}
    n_rounds = (r - 1) + int(prev.get("rounds_total", 0))
    n_msgs = sum(1 for e in gone if e.sent) + int(prev.get("messages_total", 0))
    n_tokens = sum(e.tokens for e in gone) + int(prev.get("tokens_total", 0))
    earlier = list(prev.get("transcripts", []))
    quoted = [str(p) for p in prev.get("prompts", [])] + removed_prompts(gone)
    prompts = within_share(quoted, int(PROMPTS_SHARE * e_win * 4))
    left_out = int(prev.get("prompts_left_out", 0)) + len(quoted) - len(prompts)
    marker = Entry({"role": "user", "content": [{"type": "text", "text": marker_text(
        n_rounds, n_msgs, n_tokens, path, earlier, prompts, left_out)}]}, kind="snip_marker",
        uuid=f"snip-{gone[0].uuid}", timestamp=gone[0].timestamp,
        meta={"rounds_total": n_rounds, "messages_total": n_msgs, "tokens_total": n_tokens,
              "transcripts": earlier + [path], "transcript_path": path, "prompts": prompts,
              "prompts_left_out": left_out})
    freed = round(held) - marker.tokens
    if freed <= 0:
        return LayerResult(entries)
    verdict = ce.judge(entries, ctx, head_end, freed)
    ce.note_rewrite(entries, ctx, head_end)
    kept_head = [e for e in head if e.kind != "snip_marker"]
    out = adjust_anchor(kept_head + [marker] + entries[cut_end:], -freed, upto=0)
    after = count_tokens(out, cfg.overhead_tokens, cfg.count_ratio)
    st["low_water"] = after
    st["snips"] = int(st.get("snips", 0)) + 1
    report = CompactionReport(
        layer=NAME, trigger=ctx.trigger,
        action=f"snipped {r - 1} old API round(s) ({len(gone)} messages) from the middle; archived to {path}; "
               f"{ce.describe(verdict)}",
        tokens_before=tokens, tokens_after=after, transcript_path=path,
        details={"rounds": r - 1, "messages": len(gone), "tokens_removed": removed, "prompts_quoted": len(prompts),
                 "cache": verdict.details()})
    return LayerResult(out, report)
