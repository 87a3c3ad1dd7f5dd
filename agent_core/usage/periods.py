"""Calendar periods for `ctxtui usage daily|weekly|monthly`: which day, week or month a record
falls in, in the time zone the user chose.

Days are computed once per record (`UsageReport.day`); weeks and months are derived from the day's
date, so a week boundary in Los Angeles or a month end in Tokyo is the local one, not UTC's.
"""
from __future__ import annotations

from datetime import date, timedelta, timezone, tzinfo

PERIODS = ("day", "week", "month")
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
UNKNOWN = "unknown"        # the day of a record without a readable timestamp


class BadTimezone(ValueError):
    """A --timezone value that is not an IANA zone name."""


def resolve_timezone(name: str | None) -> tzinfo | None:
    """The zone for an IANA name ("UTC", "Asia/Tokyo"); None means the machine's local time.
    Raises BadTimezone with a message fit for the user."""
    if name is None or name == "local":
        return None
    if name.upper() in ("UTC", "Z"):
        return timezone.utc
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError  # noqa: PLC0415  (start-up time: only for a named zone)
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError) as e:      # ValueError: '../x', absolute paths
        raise BadTimezone(f"unknown time zone {name!r} (expected an IANA name such as UTC, "
                          f"Europe/Paris or America/Los_Angeles)") from e


def week_start(day: date, first_weekday: int = 0) -> date:
    """The first day of the week holding `day`; weeks start on `first_weekday` (0 = Monday)."""
    return day - timedelta(days=(day.weekday() - first_weekday) % 7)


def period_of(day: str, period: str, first_weekday: int = 0) -> str:
    """The period label of a day label (YYYY-MM-DD): the day itself, its week's first day, or
    YYYY-MM. `unknown` stays unknown."""
    if day == UNKNOWN or period == "day":
        return day
    if period == "month":
        return day[:7]
    if period == "week":
        return week_start(date.fromisoformat(day), first_weekday).isoformat()
    raise ValueError(f"unknown period {period!r}; expected one of {', '.join(PERIODS)}")
