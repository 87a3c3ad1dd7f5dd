"""Snapshots of a settled screen. `pilot.pause()` returns once the message queue is empty, but on a
loaded machine a table's idle-time size update or a Markdown block's render can land after it, so a
snapshot taken then shows the screen half-way (the CI failure of the 200×60 main screen)."""
from __future__ import annotations


async def settled(pilot, tries: int = 20) -> None:
    """Pause until two screenshots in a row are the same; fail if the screen never stops changing."""
    before = pilot.app.export_screenshot()
    for _ in range(tries):
        await pilot.pause(0.02)
        now = pilot.app.export_screenshot()
        if now == before:
            return
        before = now
    raise AssertionError(f"the screen was still changing after {tries} pauses")
