"""The 5-hour block rule (agent_core/usage/block_rule.py) the status line and `usage blocks` share."""
from __future__ import annotations

from datetime import datetime, timezone

from agent_core.usage.block_rule import BLOCK_S, active_block, blocks


def at(day: int, hh: int, mm: int = 0) -> float:
    return datetime(2025, 6, day, hh, mm, tzinfo=timezone.utc).timestamp()


def test_a_block_starts_at_the_hour_of_its_first_activity_and_spans_midnight():
    times = [at(14, 22, 40), at(14, 23, 50), at(15, 1, 10)]
    [b] = blocks(times)
    assert (b.start, b.end) == (at(14, 22), at(15, 3))
    assert active_block(times, at(15, 2, 0)).left(at(15, 2, 0)) == 3600


def test_activity_after_the_end_or_after_five_quiet_hours_starts_a_new_block():
    times = [at(14, 9, 30), at(14, 14, 5), at(14, 14, 30)]
    found = blocks(times)
    assert [(b.start, b.end) for b in found] == [(at(14, 9), at(14, 14)), (at(14, 14), at(14, 19))]
    quiet = [at(14, 9, 0), at(14, 9, 10), at(14, 14, 20)]      # 14:20 is over 5 h after 09:10
    assert [b.start for b in blocks(quiet)] == [at(14, 9), at(14, 14)]


def test_no_active_block_once_it_ended():
    times = [at(14, 9, 30)]
    assert active_block(times, at(14, 13, 59)) is not None
    assert active_block(times, at(14, 9) + BLOCK_S) is None
    assert active_block([], at(14, 9)) is None
