"""Snapshots of a settled screen. `pilot.pause()` returns once the message queue is empty, but on a
loaded machine a table's idle-time size update or a Markdown block's render can land after it, so a
snapshot taken then shows the screen half-way (the CI failure of the 200×60 main screen)."""
from __future__ import annotations

from tests.tui_fakes import HISTORY, context_event, cost_event, scripted_turn


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


# ---- the main screen with fixed figures (tests/tui_fakes.py) ------------------------------------------

STATE_TOKENS = {"ok": 60_000, "warning": 150_000, "error": 160_000, "autocompact": 170_000, "blocking": 180_000}


async def fill(app, state: str, pilot) -> None:
    """The main screen after one scripted turn, with the panes in `state`. The app hands the
    loop's figures to the panes once per frame: the frame passes before the panes are set here."""
    app.prompt_input.cursor_blink = False
    await app.conversation.add_user("Explore the project and summarise it")
    for e in scripted_turn():
        await app.handle_event(e)
    await app.handle_event(context_event(STATE_TOKENS[state]))
    await app.handle_event(cost_event())
    await pilot.pause()
    for _ in range(100):           # on a loaded machine the frame can come after the pause
        if not app.figures.scheduled:
            break
        await pilot.pause(0.01)
    assert not app.figures.scheduled, "the loop's figures were never handed to the panes"
    app.context_pane.history = HISTORY
    app.context_pane.compactions = sum(1 for p in HISTORY if p[2])   # the ◆ marks, as the agent would count them
    app.cost_pane.extras = {"cache_hit_rate": 0.842, "saved_usd": 0.8123, "burn_usd_per_hour": 1.37}
    app.cost_pane.cost = cost_event()
    app.conversation.scroll_end(animate=False)
