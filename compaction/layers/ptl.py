"""Prompt-too-long on the summary call: shed what the summary can do without, then try again.

The API says by how much the request was too long (`prompt is too long: N tokens > M maximum`);
without a usable gap a fifth of the request's estimate is shed. In three tiers, each only when the
one before is not enough:

1. raw output: the content of the oldest tool results (and re-attached files) becomes a short
   placeholder; every tool_use/tool_result pair stays whole;
2. whole API rounds (compaction.rounds), oldest first and never the newest — keeping from each
   what the summary must carry: an earlier summary (a compaction's, a collapse digest), a snip
   marker, the text of every user message; a marker at the head says that rounds were left out;
3. a very long user message (over collapse's LONG_USER_CHARS), oldest first, is kept by its head
   and tail, as collapse, snip and the session notes quote one, the whole of it in the transcript.

An earlier summary is never cut or dropped. When nothing is left to shed, `shed_for_retry` says
so (None) and the stage fails with the history kept.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Sequence

from compaction.entry import Entry, user
from compaction.estimate import estimate_block
from compaction.layers.collapse import LONG_USER_CHARS, head_and_tail
from compaction.rounds import group_by_api_round

RETRY_MARKER = ("[Older assistant turns and tool calls of this conversation were left out so that the summary "
                "request fits the context window; every earlier summary and every user message is still here.]")
TOOL_OUTPUT_LEFT_OUT = "[tool output left out so the summary request fits; the full transcript is on disk]"
FILE_LEFT_OUT = "[re-attached file left out so the summary request fits; the full transcript is on disk]"
WHOLE_IN_TRANSCRIPT = "the summary request could not hold it all; the whole message is in the transcript"
GAP_MARGIN = 1.1      # the gap is in the server's tokens, the shedding in estimated ones

# Kinds the summary must always see whole: a compaction's summary or a collapse digest, a snip marker.
KEPT_KINDS = frozenset({"summary", "snip_marker"})

_PTL = re.compile(r"prompt is too long:\s*([\d,_]+)\s*tokens?\s*>\s*([\d,_]+)\s*maximum", re.I)


def parse_prompt_too_long(message: str) -> tuple[int, int] | None:
    """(actual tokens, maximum) from `prompt is too long: N tokens > M maximum`, or None."""
    m = _PTL.search(message or "")
    if not m:
        return None
    return int(re.sub(r"[,_]", "", m.group(1))), int(re.sub(r"[,_]", "", m.group(2)))


def is_prompt_too_long(message: str) -> bool:
    return "prompt is too long" in (message or "").lower()


def token_gap(message: str) -> int | None:
    """How many tokens must go, or None when the message does not say."""
    parsed = parse_prompt_too_long(message)
    if parsed is None:
        return None
    actual, limit = parsed
    return actual - limit if actual > limit else None


def is_retry_marker(e: Entry) -> bool:
    return bool(e.meta.get("ptl_retry_marker"))


def retry_marker() -> Entry:
    return user(RETRY_MARKER, ptl_retry_marker=True)


@dataclass(frozen=True)
class Trimmed:
    """One retry's request and what was shed to make it (estimated tokens); also the running total."""
    entries: list[Entry]
    cleared_results: int = 0     # tool results (and re-attached files) whose content became a placeholder
    cleared_tokens: int = 0
    dropped_rounds: int = 0      # whole rounds left out, their summaries and user text kept
    dropped_tokens: int = 0
    shortened_messages: int = 0  # very long user messages kept by their head and tail
    shortened_tokens: int = 0

    @property
    def shed_tokens(self) -> int:
        return self.cleared_tokens + self.dropped_tokens + self.shortened_tokens

    def plus(self, later: "Trimmed") -> "Trimmed":
        """The running total after a later retry (its entries)."""
        return Trimmed(later.entries, self.cleared_results + later.cleared_results,
                       self.cleared_tokens + later.cleared_tokens, self.dropped_rounds + later.dropped_rounds,
                       self.dropped_tokens + later.dropped_tokens, self.shortened_messages + later.shortened_messages,
                       self.shortened_tokens + later.shortened_tokens)


def _cleared(b: dict[str, Any]) -> dict[str, Any]:
    return {**b, "content": TOOL_OUTPUT_LEFT_OUT}


def _clear_output(work: list[Entry], target: int) -> tuple[int, int]:
    """Tier 1: replace the oldest raw outputs by placeholders, in place, until `target` estimated
    tokens are freed (or none is left). Returns (outputs cleared, tokens freed)."""
    count = freed = 0
    for i, e in enumerate(work):
        if freed >= target:
            break
        if e.kind == "attachment":
            if e.text() != FILE_LEFT_OUT and e.tokens > user(FILE_LEFT_OUT).tokens:
                new = e.with_content([{"type": "text", "text": FILE_LEFT_OUT}], left_out_for_summary=True)
                freed += e.tokens - new.tokens
                count += 1
                work[i] = new
            continue
        if e.role != "user" or not e.tool_result_ids():
            continue
        content = list(e.content)
        for j, b in enumerate(content):
            if freed >= target:
                break
            if b.get("type") != "tool_result" or b.get("content") == TOOL_OUTPUT_LEFT_OUT:
                continue
            saved = estimate_block(b) - estimate_block(_cleared(b))
            if saved > 0:
                content[j] = _cleared(b)
                freed += saved
                count += 1
        if content != e.content:
            work[i] = e.with_content(content)
    return count, freed


def _what_stays(e: Entry) -> Entry | None:
    """What a dropped round keeps of an entry: summaries, snip markers and a retry marker whole,
    a user message's text; None for the rest (answers, tool calls and results, attachments)."""
    if e.kind in KEPT_KINDS or is_retry_marker(e):
        return e
    if e.kind != "message" or e.role != "user":
        return None
    texts = [b for b in e.content if b.get("type") == "text" and str(b.get("text", "")).strip()]
    if not texts:
        return None
    return e if len(texts) == len(e.content) else e.with_content(texts)


def _drop_rounds(work: list[Entry], target: int) -> tuple[list[Entry], int, int]:
    """Tier 2: drop the oldest rounds, never the newest, until `target` estimated tokens are freed,
    each leaving what `_what_stays` keeps. Returns (entries, rounds dropped, tokens freed)."""
    groups = group_by_api_round(work)
    out: list[Entry] = []
    dropped = freed = 0
    keep_from = max(0, len(groups) - 1)
    for i, g in enumerate(groups[:keep_from]):
        if freed >= target:
            keep_from = i
            break
        stays = [s for s in (_what_stays(e) for e in g) if s is not None]
        saved = sum(e.tokens for e in g) - sum(e.tokens for e in stays)
        out += stays
        if saved > 0:
            dropped += 1
            freed += saved
    if not dropped:
        return work, 0, 0
    kept = strip_orphans(out + [e for g in groups[keep_from:] for e in g])
    if not is_retry_marker(kept[0]):
        kept.insert(0, retry_marker())
    return kept, dropped, freed


def _shorten_long_messages(work: list[Entry], target: int) -> tuple[int, int]:
    """Tier 3: the oldest very long user messages kept by head and tail, in place, until `target`
    estimated tokens are freed. Returns (messages shortened, tokens freed)."""
    count = freed = 0
    for i, e in enumerate(work):
        if freed >= target:
            break
        if e.kind != "message" or e.role != "user" or is_retry_marker(e):
            continue
        content = [({**b, "text": head_and_tail(b["text"], WHOLE_IN_TRANSCRIPT)}
                    if b.get("type") == "text" and len(str(b.get("text", ""))) > LONG_USER_CHARS else b)
                   for b in e.content]
        if content != e.content:
            new = e.with_content(content, shortened_for_summary=True)
            freed += e.tokens - new.tokens
            count += 1
            work[i] = new
    return count, freed


def shed_for_retry(entries: Sequence[Entry], gap: int | None, fallback_fraction: float = 0.2) -> Trimmed | None:
    """The next attempt's entries, smaller by about `gap` tokens (× GAP_MARGIN; without a gap, by
    `fallback_fraction` of their estimate), shed tier by tier (the module's docstring). None when
    nothing is left to shed: the request is as small as it can be made without losing what the
    summary must carry."""
    work = [e for e in entries if e.sent]
    if gap is not None and gap > 0:
        target = math.ceil(gap * GAP_MARGIN)
    else:
        target = max(1, math.ceil(sum(e.tokens for e in work) * fallback_fraction))
    cleared, cleared_tokens = _clear_output(work, target)
    dropped = dropped_tokens = shortened = shortened_tokens = 0
    if cleared_tokens < target:
        work, dropped, dropped_tokens = _drop_rounds(work, target - cleared_tokens)
    if cleared_tokens + dropped_tokens < target:
        shortened, shortened_tokens = _shorten_long_messages(work, target - cleared_tokens - dropped_tokens)
    if not (cleared or dropped or shortened):
        return None
    return Trimmed(work, cleared, cleared_tokens, dropped, dropped_tokens, shortened, shortened_tokens)


def strip_orphans(entries: Sequence[Entry]) -> list[Entry]:
    """Remove tool_result blocks that do not answer a tool_use of the preceding assistant message
    (as the request will be merged by `project`); entries left empty are dropped.

    Rounds never split a pair, so this is a guard, not the mechanism."""
    out: list[Entry] = []
    prev_uses: set[str] = set()
    cur_uses: set[str] = set()     # tool_use ids of the assistant message being merged
    last_role: str | None = None
    for e in entries:
        if not e.sent:
            out.append(e)
            continue
        if e.role == "assistant":
            if last_role != "assistant":
                cur_uses = set()
            cur_uses |= set(e.tool_use_ids())
            last_role = "assistant"
            out.append(e)
            continue
        if last_role == "assistant":
            prev_uses = cur_uses
        elif last_role is None:
            prev_uses = set()
        last_role = "user"
        orphan = [i for i in e.tool_result_ids() if i not in prev_uses]
        if not orphan:
            out.append(e)
            continue
        content = [b for b in e.content if not (b.get("type") == "tool_result" and b["tool_use_id"] in orphan)]
        if content:
            out.append(e.with_content(content))
    return out
