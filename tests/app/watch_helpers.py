"""Driving the watch screen with Pilot in tests: the app over a target, and bounded polls for what it shows."""
from __future__ import annotations

from pathlib import Path

from agent_core.watch.target import WatchTarget
from tests.pilot_until import DEADLINE, until  # noqa: F401  (the watch tests import them from here)

SIZE = (120, 40)


def make_app(target: WatchTarget, tmp_path: Path, **kw):
    from app.watch.app import WatchApp

    return WatchApp(target, cwd=tmp_path, **kw)
