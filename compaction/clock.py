"""The one clock that timestamps and cache decisions read, so that time can be made to pass.

Whether the prompt cache is warm is a question of time: a cached prefix lives until
its TTL after the request that last read or wrote it. Entry timestamps, the pipeline's `now`, the
session log, compaction transcripts and the demo model's cache all read `now()`, so they agree on
how long ago anything happened.

Only the offline demo moves the clock on (`/wait` in the TUI): it lets a user see what a pause
does — the cache expires, and the layers that rewrite old context may act for free — without
waiting five minutes. Nothing a real session does calls `skip`. Moving the clock is harmless
after a switch to a real model: every gap measured afterwards is a real one, and the only gap
that looks longer than it was is the one across the skip, before which no real request was made.

Durations (how long a call or a compaction took) are measured with `time.monotonic`, not here.
"""
from __future__ import annotations

import math
import time

_skipped = 0.0


def now() -> float:
    """Seconds since the epoch, plus whatever the demo let pass."""
    return time.time() + _skipped


def skipped() -> float:
    """Seconds the demo has let pass in this process (0.0 in a real session)."""
    return _skipped


def skip(seconds: float) -> float:
    """Let `seconds` pass at once; returns the total skipped. Raises ValueError for a figure that
    is not a positive, finite number of seconds."""
    global _skipped
    if not isinstance(seconds, (int, float)) or not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"time to skip must be a positive number of seconds, not {seconds!r}")
    _skipped += float(seconds)
    return _skipped


def reset() -> None:
    """Back to the wall clock (tests; a process that starts over)."""
    global _skipped
    _skipped = 0.0
