"""/cost shows API time (model calls added up) and wall time (the session's age), issue 14."""
from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widgets import Static

from app.stylesheets import stylesheets
from app.widgets.cost_pane import CostPane
from tests.tui_fakes import cost_event


class Host(App):
    CSS_PATH = stylesheets("panes.tcss")

    def __init__(self, width: int) -> None:
        super().__init__()
        self.width = width

    def compose(self) -> ComposeResult:
        pane = CostPane(id="cost-pane")
        pane.styles.width = self.width
        yield pane


async def summary_text(width: int, extras: dict) -> str:
    app = Host(width)
    async with app.run_test(size=(140, 40)) as pilot:
        pane = app.query_one(CostPane)
        pane.extras = extras
        pane.cost = cost_event()
        await pilot.pause()
        return str(pane.query_one("#cost-summary", Static).render())


async def test_wide_cost_pane_says_api_and_wall_time():
    text = await summary_text(130, {"api_s": 12.5, "wall_s": 200.0})
    assert "API time 12.5s · wall time 3m20s" in text


async def test_side_pane_and_unknown_times():
    assert "API time" not in await summary_text(50, {"api_s": 12.5, "wall_s": 200.0})
    assert "API time" not in await summary_text(130, {})
    assert "API time — · wall time 1m00s" in await summary_text(130, {"wall_s": 60.0})
