"""The 5-hour usage block that is active now, from activity times (what `ctxtui statusline` shows).

Claude's Pro and Max plans count usage in 5-hour windows. The minimal rule used here: a block
starts at the hour (UTC) of the first activity after the previous block ended; it lasts 5 hours;
activity at or after its end (so also after 5 quiet hours) starts the next one. The block is active
while now is before its end and the last activity is less than 5 hours old. The same rule as
`ctxtui usage blocks` (reports/blocks.py), over bare times: the status line keeps no more.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

BLOCK_S = 5 * 3600


@dataclass(frozen=True)
class Block:
    start: float
    end: float
    last_activity: float

    def left(self, now: float) -> float:
        """Seconds until the block ends (0 when it has)."""
        return max(0.0, self.end - now)


def blocks(times: Iterable[float]) -> list[Block]:
    """Every block the activity times fall in, oldest first."""
    out: list[Block] = []
    start = end = last = None
    for t in sorted(times):
        if start is None or t >= end:      # past its 5 hours (so also after 5 quiet hours)
            if start is not None:
                out.append(Block(start, end, last))
            start = t - t % 3600
            end = start + BLOCK_S
        last = t
    if start is not None:
        out.append(Block(start, end, last))
    return out


def active_block(times: Iterable[float], now: float) -> Block | None:
    """The block running at `now`, or None when the last one has ended."""
    found = blocks(times)
    if not found:
        return None
    b = found[-1]
    return b if now < b.end and now - b.last_activity < BLOCK_S else None
