"""The cost pane's table (app/widgets/figure_table.py): header on top while the rows scroll, a row
drawn again only when its cells change, cells cut with an ellipsis, and a cell is only ever text."""
from __future__ import annotations

from rich.text import Text
from textual.app import App, ComposeResult

from app.widgets.figure_table import FigureTable

COLUMNS = [("name", Text("name"), 8), ("n", Text("n", justify="right"), 5)]


def rows(count: int, start: int = 0) -> list[tuple[str, list[Text]]]:
    return [(f"r{i}", [Text(f"row {i}"), Text(f"{start + i:,}", justify="right")]) for i in range(count)]


class Holder(App):
    CSS = "FigureTable { height: 6; width: 20; }"

    def compose(self) -> ComposeResult:
        yield FigureTable(id="t")


def lines(table: FigureTable) -> list[str]:
    return [table.render_line(y).text for y in range(table.size.height)]


async def test_header_stays_while_the_rows_scroll_and_each_row_is_drawn_once():
    app = Holder()
    async with app.run_test() as pilot:
        table = app.query_one(FigureTable)
        table.show(COLUMNS, rows(20))
        await pilot.pause()
        shown = lines(table)
        assert shown[0].split() == ["name", "n"] and shown[1].split() == ["row", "0", "0"]
        table.scroll_to(y=10, animate=False)
        await pilot.pause()
        shown = lines(table)
        assert shown[0].split() == ["name", "n"] and shown[1].split() == ["row", "10", "10"]
        assert table.row_count == 20 and table.get_row("r3")[1].plain == "3"
        # new figures in one row: only that row is drawn again
        drawn = {k: v[1] for k, v in table._drawn.items()}
        changed = rows(20)
        changed[12] = ("r12", [Text("row 12"), Text("9,999", justify="right")])
        table.show(COLUMNS, changed)
        lines(table)
        assert table._drawn["r12"][1] is not drawn["r12"]
        assert all(table._drawn[k][1] is drawn[k] for k in drawn if k != "r12")
        assert "9,999" in lines(table)[3]


async def first_row(cells: list[Text]) -> str:
    app = Holder()
    async with app.run_test() as pilot:
        table = app.query_one(FigureTable)
        table.show(COLUMNS, [("a", cells)])
        await pilot.pause()
        return lines(table)[1]


async def test_cells_are_cut_with_an_ellipsis_and_numbers_right_aligned():
    row = await first_row([Text("a-very-long-model-name"), Text("7", justify="right")])
    assert row.startswith(" a-very-…") and row[:17].endswith("    7 ")


async def test_a_cell_is_text_never_markup():
    row = await first_row([Text("[b]x[/b]"), Text("[@click=app.quit]", justify="right")])
    assert "[b]x[/b]" in row and "[@cl…" in row      # literal, cut to its column
