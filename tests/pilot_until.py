"""Waiting in Pilot tests for what the app does on its own time (a timer, a worker, a watch): a
bounded poll with the app running in between, so a loaded machine makes a test slower, not red."""
from __future__ import annotations

import time
from typing import Callable

DEADLINE = 10.0   # generous: a bound for correctness, never a timing check


async def until(pilot, cond: Callable[[], object], what: str, deadline: float = DEADLINE) -> None:
    """Pause until `cond()` is true; fail naming `what` after `deadline` seconds."""
    end = time.monotonic() + deadline
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.02)
