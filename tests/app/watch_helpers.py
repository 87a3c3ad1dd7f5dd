"""Driving the watch screen with Pilot in tests: the app over a target, and bounded polls for what it shows."""
from __future__ import annotations

import time
from pathlib import Path

from agent_core.watch.target import WatchTarget

SIZE = (120, 40)
DEADLINE = 10.0   # a generous deadline for correctness, never a timing check


async def until(pilot, cond, what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"the watch screen never showed {what}")
        await pilot.pause(0.02)


def make_app(target: WatchTarget, tmp_path: Path, **kw):
    from app.watch.app import WatchApp

    return WatchApp(target, cwd=tmp_path, **kw)
