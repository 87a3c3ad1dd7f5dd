"""The cost pane's table (app/widgets/figure_table.py): header on top while the rows scroll, a row
drawn again only when its cells change, cells cut with an ellipsis, and a cell is only ever text."""
from __future__ import annotations

from contextlib import asynccontextmanager

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


@asynccontextmanager
async def showing(table_rows: list[tuple[str, list[Text]]]):
    """(pilot, table) of a running app whose table shows COLUMNS and these rows."""
    app = Holder()
    async with app.run_test() as pilot:
        table = app.query_one(FigureTable)
        table.show(COLUMNS, table_rows)
        await pilot.pause()
        yield pilot, table


def lines(table: FigureTable) -> list[str]:
    return [table.render_line(y).text for y in range(table.size.height)]


async def test_header_stays_while_the_rows_scroll_and_each_row_is_drawn_once():
    async with showing(rows(20)) as (pilot, table):
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
    async with showing([("a", cells)]) as (_, table):
        return lines(table)[1]


async def test_cells_are_cut_with_an_ellipsis_and_numbers_right_aligned():
    row = await first_row([Text("a-very-long-model-name"), Text("7", justify="right")])
    assert row.startswith(" a-very-…") and row[:17].endswith("    7 ")


async def test_a_cell_is_text_never_markup():
    row = await first_row([Text("[b]x[/b]"), Text("[@click=app.quit]", justify="right")])
    assert "[b]x[/b]" in row and "[@cl…" in row      # literal, cut to its column


async def test_rows_put_one_at_a_time_keep_their_order_and_change_in_place():
    app = Holder()
    async with app.run_test() as pilot:
        table = app.query_one(FigureTable)
        table.set_columns(COLUMNS)
        for key, cells in rows(3):
            table.put(key, cells)
        table.put("r1", [Text("row 1"), Text("42", justify="right")])     # in place, not appended
        await pilot.pause()
        assert table.row_count == 3 and [table.get_row_at(i)[1].plain for i in range(3)] == ["0", "42", "2"]
        assert table.virtual_size.height == 4                               # the header and three rows
        table.clear_rows()
        assert table.row_count == 0 and not table._drawn and table.virtual_size.height == 1


async def test_drawn_lines_stay_bounded_however_many_rows_are_scrolled_past():
    from app.widgets.figure_table import DRAWN_ROWS

    app = Holder()
    async with app.run_test() as pilot:
        table = app.query_one(FigureTable)
        table.set_columns(COLUMNS)
        for key, cells in rows(DRAWN_ROWS * 3):
            table.put(key, cells)
        await pilot.pause()
        for y in range(0, DRAWN_ROWS * 3, 4):      # every row drawn once, a screen at a time
            table.scroll_to(y=y, animate=False, immediate=True)
            lines(table)
        assert len(table._drawn) == DRAWN_ROWS
        assert "r0" not in table._drawn and f"r{DRAWN_ROWS * 3 - 1}" in table._drawn


async def test_the_cursor_row_is_drawn_in_the_cursor_style_and_rows_carry_their_index():
    async with showing(rows(3)) as (_, table):
        plain = table.render_line(2)
        table.show_cursor, table.cursor_row = True, 1
        cursor = table.get_component_rich_style("figure-table--cursor")
        lit = table.render_line(2)
        assert lit.text == plain.text
        assert all(seg.style.bgcolor == cursor.bgcolor for seg in lit if seg.text.strip())
        assert all(seg.style.bgcolor != cursor.bgcolor for seg in table.render_line(1) if seg.text.strip())
        assert {seg.style.meta.get("row") for seg in lit} == {1}
