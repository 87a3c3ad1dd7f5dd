"""API-round grouping (CC): cuts happen only at these boundaries so tool pairs stay together."""
from __future__ import annotations

from typing import Sequence

from compaction.entry import Entry


def round_starts(entries: Sequence[Entry]) -> list[int]:
    """Indexes where a group starts: 0, then each assistant entry whose response id differs
    from the previous assistant's (an assistant with no id always starts a group)."""
    starts = [0] if entries else []
    prev_id: object = object()
    for i, e in enumerate(entries):
        if e.role != "assistant" or not e.sent:
            continue
        rid = e.response_id
        if rid is None or rid != prev_id:
            if i != 0:
                starts.append(i)
        prev_id = rid
    return starts


def group_by_api_round(entries: Sequence[Entry]) -> list[list[Entry]]:
    starts = round_starts(entries)
    return [list(entries[a:b]) for a, b in zip(starts, starts[1:] + [len(entries)])]


def unseen_round(entries: Sequence[Entry]) -> list[Entry]:
    """The entries after the last assistant message: the newest prompt and the tool results the
    model has not seen yet — what no compaction of older history can shrink."""
    for i in range(len(entries) - 1, -1, -1):
        if entries[i].message.get("role") == "assistant":
            return list(entries[i + 1:])
    return list(entries)


def newest_round_tokens(entries: Sequence[Entry], overhead: int) -> int:
    """What the newest round alone needs with the system prompt and tools (`overhead`): at or above
    the blocking limit, no compaction of older history can make room for it."""
    return overhead + sum(e.tokens for e in unseen_round(entries))
