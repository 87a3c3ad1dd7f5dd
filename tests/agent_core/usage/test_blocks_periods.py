"""5-hour blocks and calendar periods as pure functions (agent_core/usage/blocks.py, periods.py)."""
from __future__ import annotations

from datetime import date, datetime, timezone

import pytest

from agent_core.pricing.pricer import Priced
from agent_core.usage.blocks import BLOCK_SECONDS, Gap, active_block, build_blocks, project, token_limit, with_gaps
from agent_core.usage.periods import BadTimezone, period_of, resolve_timezone, week_start
from agent_core.usage.report import Response, UsageReport
from agent_core.logs import UsageRecord


def at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp()


def resp(ts: str, tokens: int, cost: float | None = 1.0, model: str = "m") -> Response:
    return Response(at(ts), model, "s", {"input": tokens, "output": 0, "cache_write_5m": 0, "cache_write_1h": 0,
                                         "cache_read": 0}, Priced(cost, None, None))


def test_a_response_at_a_blocks_end_starts_the_next_one_without_a_gap():
    blocks = build_blocks([resp("2025-06-14T10:59:00", 1), resp("2025-06-14T15:00:00", 2),
                           resp("2025-06-14T10:00:00", 4)])          # order does not matter
    assert [(b.start, sum(b.tally.tokens.values())) for b in blocks] == [(at("2025-06-14T10:00:00"), 5),
                                                                       (at("2025-06-14T15:00:00"), 2)]
    assert not any(isinstance(x, Gap) for x in with_gaps(blocks))
    assert blocks[0].end - blocks[0].start == BLOCK_SECONDS


def test_projection_floors_the_elapsed_time_at_a_minute_and_unknown_prices_stay_unknown():
    b = build_blocks([resp("2025-06-14T10:00:00", 600, cost=None)])[0]
    p = project(b, at("2025-06-14T10:00:01"))
    assert p.tokens_per_minute == pytest.approx(600)                  # 600 tokens over the 1-minute floor
    assert p.cost_per_hour is None and p.projected_cost is None
    assert p.seconds_left == pytest.approx(BLOCK_SECONDS - 1)
    assert active_block([b], at("2025-06-14T15:00:00")) is None       # its 5 hours are over


def test_token_limit_values():
    blocks = build_blocks([resp("2025-06-13T10:00:00", 70), resp("2025-06-14T10:00:00", 10)])
    now = at("2025-06-14T10:30:00")
    assert token_limit("max", blocks, now) == 70                      # the active block does not count
    assert token_limit("500", blocks, now) == 500
    assert token_limit("max", blocks[1:], now) is None
    with pytest.raises(ValueError):
        token_limit("0", blocks, now)


def test_weeks_months_and_zones():
    assert week_start(date(2025, 6, 15)) == date(2025, 6, 9)          # a Sunday: its Monday
    assert week_start(date(2025, 6, 15), first_weekday=6) == date(2025, 6, 15)
    assert period_of("2025-06-15", "week") == "2025-06-09"
    assert period_of("2025-06-15", "month") == "2025-06"
    assert period_of("unknown", "month") == "unknown"
    assert resolve_timezone(None) is None and resolve_timezone("utc") is timezone.utc
    for bad in ("Mars/Olympus", "../etc/passwd", "/etc/localtime", ""):
        with pytest.raises(BadTimezone):
            resolve_timezone(bad)


def test_days_across_a_daylight_saving_change_in_los_angeles():
    # 2025-03-09 02:00 PST -> 03:00 PDT. 07:30Z on the 10th is 00:30 PDT Monday; 07:30Z on the 9th
    # was 23:30 PST Saturday the 8th.
    report = UsageReport(tz=resolve_timezone("America/Los_Angeles"))
    for i, ts in enumerate(("2025-03-09T07:30:00", "2025-03-10T06:30:00", "2025-03-10T07:30:00")):
        report.add(UsageRecord("s", "m", at(ts), f"k{i}", {"input": 10 ** i}))
    days = {d: t.tokens["input"] for d, t in report.by_day.items()}
    assert days == {"2025-03-08": 1, "2025-03-09": 10, "2025-03-10": 100}
    weeks = {w: sum(t.tokens["input"] for t in m.values()) for w, m in report.by_period("week").items()}
    assert weeks == {"2025-03-03": 11, "2025-03-10": 100}
