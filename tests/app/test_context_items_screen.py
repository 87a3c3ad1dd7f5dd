"""/context lists the largest items in the context with their tokens (issue 14)."""
from __future__ import annotations

import pytest
from textual.app import App
from textual.widgets import DataTable

from agent_core.context_items import ContextItem
from agent_core.events import ContextUpdate
from app.tui.screens.context_screen import ContextScreen
from app.stylesheets import stylesheets
from tests.app.tui_helpers import make_app, send


class Host(App):
    CSS_PATH = stylesheets("context_screen.tcss", "panes.tcss")

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


@pytest.mark.slow
async def test_slash_context_lists_what_the_session_read(tmp_path):
    """Through the app on the demo model: the files it read are among the largest items; /cost
    shows the session's wall time (API time too when the agent keeps it)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    for i in range(3):
        (ws / f"mod{i}.py").write_text("".join(f"def f{j}(x):\n    return x + {j}\n" for j in range(200)))
    app, _events = make_app(ws)
    async with app.run_test(size=(120, 50)) as pilot:
        await send(app, pilot, "read mod1.py and explain it")
        app.run_slash("/context")
        await pilot.pause()
        assert isinstance(app.screen, ContextScreen)
        items = app.screen.items
        view = app.agent.pipeline.view(app.agent.entries)[0]
        assert any(i.kind == "file read" and i.label.endswith(".py") for i in items)
        assert items and [i.tokens for i in items] == sorted((i.tokens for i in items), reverse=True)
        assert items[0].tokens <= app.agent.tokens() and len(items) <= 12 and view
        table = app.screen.query_one("#context-items", DataTable)
        assert table.row_count == len(items)
        await pilot.press("escape")
        app.run_slash("/cost")
        await pilot.pause()
        summary = str(app.cost_pane.query_one("#cost-summary").render())
        assert "API time " in summary and "wall time " in summary
