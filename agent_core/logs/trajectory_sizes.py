"""Sizing a trajectory's messages from its logged usage instead of estimates.

Each request's usage gives the size of its whole input (input + cache writes + cache reads). So
what a request added is exactly its total minus the previous request's total (or minus the
overhead, for the first request and the first after a compaction); that measured growth is split
over the added messages in proportion to their estimates. A request whose whole context the log
holds (`Request.sent`) is sized the same way: its messages not sized by an earlier request share
its total minus the overhead and the ones that were. Where the growth is not positive (a log
that shrank without a compaction record), the estimates are kept and the request is counted in
`Trajectory.uncalibrated`.
"""
from __future__ import annotations

from typing import Sequence

from agent_core.logs.trajectory import Message, Trajectory

INPUT_BUCKETS = ("input", "cache_write_5m", "cache_write_1h", "cache_read")


def input_total(usage: dict[str, int]) -> int:
    """Every input token of a request, cached or not."""
    return sum(int(usage.get(k, 0)) for k in INPUT_BUCKETS)


def split(total: int, weights: Sequence[int]) -> list[int]:
    """`total` split in proportion to `weights` (whole numbers, summing exactly to `total`;
    equal parts when every weight is zero)."""
    n = len(weights)
    if n == 0:
        return []
    w = [max(int(x), 0) for x in weights]
    s = sum(w)
    if s == 0:
        w, s = [1] * n, n
    parts = [total * x // s for x in w]
    rest = total - sum(parts)
    order = sorted(range(n), key=lambda i: (-(total * w[i] % s), i))
    for i in order[:rest]:
        parts[i] += 1
    return parts


def calibrate(traj: Trajectory) -> None:
    """Set every message's `tokens` from the measured growth between requests (module doc). After
    a compaction, messages already sized by an earlier request (kept through a rewrite) keep their
    size; the new ones share the rest."""
    prev: int | None = None
    uncalibrated = 0
    sized: set[int] = set()
    for r in traj.requests:
        total = input_total(r.usage)
        msgs: list[Message] = list(r.added)
        if r.sent is not None:
            kept = [m for m in r.sent if id(m) in sized]
            msgs = [m for m in r.sent if id(m) not in sized]
            grew = total - traj.overhead_tokens - sum(m.tokens for m in kept)
        elif prev is None or r.context_after_compaction is not None:
            kept = [m for m in r.context_after_compaction or [] if id(m) in sized]
            msgs = [m for m in r.context_after_compaction or [] if id(m) not in sized] + msgs
            grew = total - traj.overhead_tokens - sum(m.tokens for m in kept)
        else:
            grew = total - prev
        prev = total
        sized.update(id(m) for m in msgs)
        if not msgs:
            continue
        if grew <= 0:
            uncalibrated += 1
            continue
        for m, t in zip(msgs, split(grew, [m.tokens for m in msgs])):
            m.tokens = t
    traj.uncalibrated = uncalibrated
