"""The 5-hour usage block rule, as Claude's Pro and Max plans count usage — over bare activity
times, so `ctxtui statusline` can use it without the usage report (`usage/blocks.py` adds the
tallies, gaps and projection of `ctxtui usage blocks` on top of the same rule).

A block starts at the first activity after the previous block ended, floored to the hour (UTC:
every zone the plans serve is a whole or half hour off UTC, so it is the same instant); it lasts
5 hours; activity at or after its end (so also after 5 quiet hours) starts the next one. A block is
active while now is inside it and its last activity is less than 5 hours old.
"""
from __future__ import annotations

from collections import namedtuple

TYPE_CHECKING = False    # typing stays unloaded at run time: 3 ms of every status line call
if TYPE_CHECKING:
    from typing import Iterable

BLOCK_S = 5 * 3600
HOUR = 3600


def opens_block(t: float, end: float | None) -> bool:
    """Does activity at `t` start a new block, the current one ending at `end` (None: no block yet)?"""
    return end is None or t >= end


def block_start(t: float) -> float:
    return t - t % HOUR


def is_active(start: float, last: float, now: float, length: float = BLOCK_S) -> bool:
    """`length`: the block's (`usage blocks --session-length`; the plans' 5 hours by default)."""
    return start <= now < start + length and now - last < length


class Block(namedtuple("Block", "start end last_activity")):
    """A 5-hour block: its start, end and last activity (epoch seconds). A named tuple, not a
    dataclass: the status line loads this on every refresh, and dataclasses costs 10 ms to import."""
    __slots__ = ()
    start: float
    end: float
    last_activity: float

    def left(self, now: float) -> float:
        """Seconds until the block ends (0 when it has)."""
        return max(0.0, self.end - now)


def fold(block: Block | None, t: float) -> Block | None:
    """`block` (the newest so far) after activity at `t`, taken in time order: the next block when
    `t` opens one; `block` with `t` as its last activity when inside it; unchanged when older."""
    if block is None or opens_block(t, block.end):
        return Block(block_start(t), block_start(t) + BLOCK_S, t)
    if t >= block.start and t > block.last_activity:
        return Block(block.start, block.end, t)
    return block


def blocks(times: Iterable[float], seed: Block | None = None) -> list[Block]:
    """Every block the activity times fall in, oldest first. `seed`: the newest block of activity
    no longer listed (the status line keeps one day of minutes): times inside or before it extend
    it or are already in it, so a chain of blocks keeps its start over any length of activity."""
    out: list[Block] = []
    start = end = last = None
    if seed is not None:
        start, end, last = seed.start, seed.end, seed.last_activity
    for t in sorted(times):
        if seed is not None and t < seed.start:
            continue
        if opens_block(t, end):
            if start is not None:
                out.append(Block(start, end, last))
            start = block_start(t)
            end = start + BLOCK_S
        last = t if last is None else max(last, t)
    if start is not None:
        out.append(Block(start, end, last))
    return out


def active_block(times: Iterable[float], now: float, seed: Block | None = None) -> Block | None:
    """The block running at `now`, or None when the last one has ended."""
    found = blocks(times, seed)
    if not found:
        return None
    b = found[-1]
    return b if is_active(b.start, b.last_activity, now) else None
