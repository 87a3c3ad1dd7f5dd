"""Prompt-too-long on the summary call (CC): trim the oldest API rounds and try again.

The API says by how much the request was too long; dropping whole rounds (compaction.rounds)
from the head until their estimate covers that gap keeps tool pairs together. Without a usable
gap, drop 20% of the rounds. At least one round always remains.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Sequence

from compaction.entry import Entry, user
from compaction.rounds import group_by_api_round

RETRY_MARKER = ("[The oldest part of this conversation was left out so that the summary request fits the "
                "context window.]")

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
    entries: list[Entry]
    dropped_rounds: int
    dropped_tokens: int


def truncate_for_retry(entries: Sequence[Entry], gap: int | None, fallback_fraction: float = 0.2) -> Trimmed | None:
    """Drop the oldest rounds so the request shrinks by at least `gap` tokens (estimated).

    A marker left by an earlier retry is stripped first, and a new one leads the result when it
    would otherwise start with an assistant message. None when fewer than two rounds remain to
    choose from (nothing can be dropped while keeping one)."""
    work = [e for e in entries if e.sent]
    if work and is_retry_marker(work[0]):
        work = work[1:]
    groups = group_by_api_round(work)
    if len(groups) < 2:
        return None
    if gap is not None and gap > 0:
        acc = drop = 0
        for g in groups:
            acc += sum(e.tokens for e in g)
            drop += 1
            if acc >= gap:
                break
    else:
        drop = max(1, math.floor(len(groups) * fallback_fraction))
    drop = min(drop, len(groups) - 1)
    if drop < 1:
        return None
    kept = strip_orphans([e for g in groups[drop:] for e in g])
    dropped_tokens = sum(e.tokens for g in groups[:drop] for e in g)
    if not kept or kept[0].role == "assistant":
        kept = [retry_marker()] + kept
    return Trimmed(kept, drop, dropped_tokens)


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
