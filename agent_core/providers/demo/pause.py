"""`/wait`: on the offline demo, let time pass so the prompt cache goes cold, as after a real pause.

The engine decides in dollars (compaction/cache_economics.py): on a warm cache a rewrite of old context must pay for
itself, so a demo answered within seconds never shows the layers that wait for a cold cache
(microcompact's time trigger; collapse and session memory when the rewrite is free). A real user
who steps away for five minutes sees them; the demo lets one ask for it. The one clock
(compaction/clock.py) moves on, so the engine's `now`, the entries' timestamps and the demo's own
cache agree that the time has passed. A real model's clock is never moved: time passes by itself.
"""
from __future__ import annotations

import re
from typing import Any

from compaction import clock
from compaction.cache_economics import warm_prefix
from compaction.accounting.cache_model import ttl_seconds

from agent_core.waiting import Pause, PauseError, describe, real_model_error

__all__ = ["Pause", "PauseError", "catch_up", "default_seconds", "describe", "let_time_pass", "parse_duration"]

MAX_SECONDS = 24 * 3600
_PART = re.compile(r"(\d+(?:\.\d+)?)\s*(h|m|s)", re.I)
_UNIT = {"h": 3600, "m": 60, "s": 1}


def parse_duration(text: str) -> float:
    """'6m', '90s', '1h', '2m30s', or a bare number of minutes → seconds. Raises PauseError."""
    s = "".join(text.split()).lower()
    if not s:
        raise PauseError("give a duration, e.g. /wait 6m, /wait 90s or /wait 1h")
    if re.fullmatch(r"\d+(?:\.\d+)?", s):
        seconds = float(s) * 60
    elif re.fullmatch(rf"(?:{_PART.pattern})+", s, re.I):
        seconds = sum(float(n) * _UNIT[u.lower()] for n, u in _PART.findall(s))
    else:
        raise PauseError(f"{text.strip()!r} is not a duration: use e.g. 6m, 90s, 1h or 2m30s")
    if seconds <= 0:
        raise PauseError("the duration must be more than zero, e.g. /wait 6m")
    if seconds > MAX_SECONDS:
        raise PauseError("at most 24h at a time")
    return seconds


def default_seconds(ttl: str) -> float:
    """The cache's lifetime and a minute more: enough for it to go cold."""
    return ttl_seconds(ttl) + 60


def let_time_pass(agent: Any, text: str = "") -> Pause:
    """Move the clock on by `text` (default: the TTL and a minute) for an agent on the demo model.
    Raises PauseError, and moves nothing, on a real model, a running turn or a bad duration."""
    info = getattr(getattr(agent, "client", None), "info", None)
    ttl = agent.pipeline.config.cache_ttl
    if not getattr(info, "offline", False):
        raise real_model_error(ttl)
    if getattr(agent, "busy", False):
        raise PauseError("A turn is running: press Esc first, then /wait.")
    seconds = parse_duration(text) if text.strip() else default_seconds(ttl)
    clock.skip(seconds)
    ai, _held, at = warm_prefix(agent.entries)
    return Pause(seconds, ttl_seconds(ttl), None if ai is None else max(0.0, clock.now() - at))


def catch_up(entries: Any) -> float:
    """A resumed demo session whose newest entry lies ahead of the clock (time let pass by `/wait`
    in an earlier process) moves the clock to it, so time never runs backwards within a session and
    a gap the user saw stays a gap. Returns the seconds moved (0.0 when the clock was ahead)."""
    newest = max((float(e.timestamp) for e in entries), default=0.0)
    ahead = newest - clock.now()
    if ahead <= 0 or ahead > MAX_SECONDS * 366:     # a stamp from a broken clock is not followed
        return 0.0
    clock.skip(ahead)
    return ahead
