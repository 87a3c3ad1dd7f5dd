"""5-hour billing blocks (`ctxtui usage blocks`), as Claude's Pro and Max plans count usage.

A block starts at its first activity, floored to the hour (UTC hours: every zone the plans serve
is a whole or half hour off UTC, so the floor is the same instant as the plan's), and lasts
5 hours; activity after its end, or after a gap of more than 5 hours, starts a new block. The
gaps between blocks are shown. The active block (now inside it, last activity under 5 hours ago)
gets the time left, the burn rate since its first activity and a projection to its end.
"""
from __future__ import annotations

from collections import namedtuple
from collections.abc import Iterable

from agent_core.pricing.tally import Tally
from agent_core.slots import ValueSlots
from agent_core.usage.block_rule import BLOCK_S as BLOCK_SECONDS, block_start, is_active, opens_block
from agent_core.usage.report import Response


class Block(ValueSlots):
    """One block: its start (the first activity floored to the hour), its first and last activity,
    its tallies per model and its length (5 hours, or `--session-length`). Written out, and the two
    below named tuples: importing dataclasses was a sixth of a repeated `ctxtui usage` run."""

    __slots__ = ("start", "first", "last", "by_model", "length")

    def __init__(self, start: float, first: float, last: float, by_model: dict[str, Tally] | None = None,
                 length: float = BLOCK_SECONDS) -> None:
        self.start = start
        self.first = first
        self.last = last
        self.by_model: dict[str, Tally] = {} if by_model is None else by_model
        self.length = length

    @property
    def end(self) -> float:
        return self.start + self.length

    @property
    def tally(self) -> Tally:
        out = Tally()
        for t in self.by_model.values():
            out.merge(t)
        return out

    def is_active(self, now: float) -> bool:
        return is_active(self.start, self.last, now, self.length)


class Gap(namedtuple("Gap", "start end")):
    """No activity from the end of one block to the start of the next."""
    __slots__ = ()


class Projection(namedtuple("Projection", "now seconds_left tokens tokens_per_minute cost_per_hour "
                                          "projected_tokens projected_cost")):
    """The active block at `now`: time left, burn rate (since its first activity) and where the
    tokens and dollars end up at the block's end if that rate holds (a cost None when a model's
    price is unknown)."""
    __slots__ = ()


def build_blocks(responses: Iterable[Response], length: float = BLOCK_SECONDS) -> list[Block]:
    """The blocks holding these responses, oldest first, each `length` seconds long."""
    blocks: list[Block] = []
    cur: Block | None = None
    for r in sorted(responses, key=lambda r: r.timestamp):
        ts = r.timestamp
        if cur is None or opens_block(ts, cur.end):
            cur = Block(start=block_start(ts), first=ts, last=ts, length=length)
            blocks.append(cur)
        cur.last = ts
        t = cur.by_model.get(r.model)
        if t is None:
            t = cur.by_model[r.model] = Tally()
        t.add(r.buckets, r.priced)
    return blocks


def with_gaps(blocks: list[Block]) -> list[Block | Gap]:
    """The blocks with a `Gap` between two that do not touch."""
    out: list[Block | Gap] = []
    for i, b in enumerate(blocks):
        if i and b.start > blocks[i - 1].end:
            out.append(Gap(blocks[i - 1].end, b.start))
        out.append(b)
    return out


def active_block(blocks: list[Block], now: float) -> Block | None:
    return blocks[-1] if blocks and blocks[-1].is_active(now) else None


def project(block: Block, now: float) -> Projection:
    """The burn rate from the block's first activity to now (at least a minute, so a block one
    second old does not project infinity), extended to the block's end."""
    t = block.tally
    tokens = sum(t.tokens.values())
    elapsed = max(now - block.first, 60.0)
    left = max(block.end - now, 0.0)
    per_second = tokens / elapsed
    cost = None if t.unpriced else t.cost
    return Projection(
        now=now, seconds_left=left, tokens=tokens, tokens_per_minute=per_second * 60,
        cost_per_hour=None if cost is None else cost / elapsed * 3600,
        projected_tokens=round(tokens + per_second * left),
        projected_cost=None if cost is None else cost + cost / elapsed * left)


def token_limit(value: str, blocks: list[Block], now: float) -> int | None:
    """`--token-limit N|max`: N, or the most tokens any finished block used (None when there is none)."""
    if value == "max":
        done = [sum(b.tally.tokens.values()) for b in blocks if not b.is_active(now)]
        return max(done) if done else None
    n = int(value)
    if n <= 0:
        raise ValueError("the token limit must be a positive number or 'max'")
    return n
