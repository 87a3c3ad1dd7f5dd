"""5-hour billing blocks (`ctxtui usage blocks`), as Claude's Pro and Max plans count usage.

A block starts at its first activity, floored to the hour (UTC hours: every zone the plans serve
is a whole or half hour off UTC, so the floor is the same instant as the plan's), and lasts
5 hours; activity after its end, or after a gap of more than 5 hours, starts a new block. The
gaps between blocks are shown. The active block (now inside it, last activity under 5 hours ago)
gets the time left, the burn rate since its first activity and a projection to its end.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from agent_core.pricing.tally import Tally
from agent_core.usage.block_rule import BLOCK_S as BLOCK_SECONDS, block_start, is_active, opens_block
from agent_core.usage.report import Response


@dataclass
class Block:
    start: float                  # the first activity floored to the hour
    first: float                  # the first and last activity in it
    last: float
    by_model: dict[str, Tally] = field(default_factory=dict)
    length: float = BLOCK_SECONDS  # 5 hours, or `--session-length`

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


@dataclass(frozen=True)
class Gap:
    """No activity from the end of one block to the start of the next."""
    start: float
    end: float


@dataclass(frozen=True)
class Projection:
    """The active block at `now`: time left, burn rate (since its first activity) and where the
    tokens and dollars end up at the block's end if that rate holds."""
    now: float
    seconds_left: float
    tokens: int
    tokens_per_minute: float
    cost_per_hour: float | None          # None when a model's price is unknown
    projected_tokens: int
    projected_cost: float | None


def build_blocks(responses: Iterable[Response], length: float = BLOCK_SECONDS) -> list[Block]:
    """The blocks holding these responses, oldest first, each `length` seconds long."""
    blocks: list[Block] = []
    cur: Block | None = None
    for r in sorted(responses, key=lambda r: r.timestamp):
        ts = r.timestamp
        if opens_block(ts, None if cur is None else cur.end):
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
