"""Snapshots of a settled screen. `pilot.pause()` returns once the message queue is empty, but on a
loaded machine a table's idle-time size update or a Markdown block's render can land after it, so a
snapshot taken then shows the screen half-way (the CI failure of the 200×60 main screen)."""
from __future__ import annotations


def tables_pending(app) -> bool:
    """A DataTable still owes its column widths (cells updated or rows added since its last idle):
    a screenshot then shows a column cut to its old width (the compaction timeline's HH:MM:SS or
    its layer names, a flake at 120×40 and 200×60)."""
    from textual.widgets import DataTable
    return any(t._require_update_dimensions or t._updated_cells or t._new_rows
               for t in app.screen.query(DataTable))


async def settled(pilot, tries: int = 20) -> None:
    """Pause until no table owes its widths and two screenshots in a row are the same; fail if the
    screen never stops changing."""
    before = pilot.app.export_screenshot()
    for _ in range(tries):
        await pilot.pause(0.02)
        now = pilot.app.export_screenshot()
        if now == before and not tables_pending(pilot.app):
            return
        before = now
    raise AssertionError(f"the screen was still changing after {tries} pauses")
