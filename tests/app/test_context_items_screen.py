"""/context lists the largest items in the context with their tokens (issue 14)."""
from __future__ import annotations

from textual.app import App
from textual.widgets import DataTable

from agent_core.context_items import ContextItem
from agent_core.events import ContextUpdate
from app.screens.context_screen import ContextScreen
from app.tui import STYLES


class Host(App):
    CSS_PATH = [STYLES / "context_screen.tcss", STYLES / "panes.tcss"]

    def __init__(self, screen: ContextScreen) -> None:
        super().__init__()
        self.start = screen

    def on_mount(self) -> None:
        self.push_screen(self.start)


async def test_context_screen_lists_the_largest_items():
    c = ContextUpdate(tokens=8_000, window=20_000, threshold=15_000, state="ok", percent_left=46.7,
                      categories={"messages": 8_000})
    items = [ContextItem("file read", "src/big.py", 4_000), ContextItem("tool result", "grep TODO", 1_000)]
    app = Host(ContextScreen(c, (), items))
    async with app.run_test(size=(120, 60)) as pilot:
        await pilot.pause()
        table = app.screen.query_one("#context-items", DataTable)
        rows = [[str(x) for x in table.get_row_at(i)] for i in range(table.row_count)]
        assert rows == [["file read", "src/big.py", "4,000", "50.0%"], ["tool result", "grep TODO", "1,000", "12.5%"]]


async def test_no_items_no_table():
    c = ContextUpdate(tokens=100, window=20_000, threshold=15_000, state="ok", percent_left=99.0)
    app = Host(ContextScreen(c, ()))
    async with app.run_test(size=(120, 60)) as pilot:
        await pilot.pause()
        assert not app.screen.query("#context-items")
