"""A read-only table of figures drawn with Textual's line API: the cost pane's models × buckets.

Textual's DataTable renders every cell through Rich (a padded renderable each), and any change to
one cell invalidates all of them: the cost pane, given new figures after each model call, drew
its thirty cells again each time (about 7 ms of `ctxtui watch`'s 20 ms from an append to the
screen), and the compaction timeline, a row more after most turns, drew its ten shown rows again
at 0.65 ms a line. Here a row is one line of text, drawn again only when one of its cells
changed. The header stays on top when the rows scroll. A row cursor is drawn where a subclass
asks for one (the timeline: `show_cursor`, `cursor_row`); every drawn row carries its index as
`row` in its style's meta, for clicks.

The cells are Rich `Text` (someone else's words, a model name from a log, are never markup)."""
from __future__ import annotations

from typing import Sequence

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.color import Color
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

Column = tuple[str, Text, int]          # (key, label, width of its cells)
DRAWN_ROWS = 256                        # drawn lines kept: a few screens of a long table, however long


class FigureTable(ScrollView, can_focus=False):
    COMPONENT_CLASSES = {"figure-table--header", "figure-table--cursor"}
    DEFAULT_CSS = """
    FigureTable { overflow-x: hidden; }
    FigureTable > .figure-table--header { text-style: bold; background: $panel; color: $foreground; }
    FigureTable > .figure-table--cursor {
        background: $block-cursor-background; color: $block-cursor-foreground;
        text-style: $block-cursor-text-style;
    }
    """

    def __init__(self, *, cell_padding: int = 1, id: str | None = None) -> None:
        super().__init__(id=id)
        self.cell_padding = cell_padding
        self.columns: list[Column] = []
        self._rows: dict[str, list[Text]] = {}
        self._order: list[str] = []
        self._drawn: dict[str, tuple[tuple, Strip]] = {}     # row key -> (what it was drawn from, the line)
        self._header: tuple[tuple, Strip] | None = None      # ((columns, header style), the header line)
        self.show_cursor = False
        self.cursor_row = 0

    # ----- data ----------------------------------------------------------------------------------
    def show(self, columns: Sequence[Column], rows: Sequence[tuple[str, list[Text]]]) -> None:
        """These columns and rows, in order; rows whose cells are unchanged are not drawn again."""
        columns = list(columns)
        if columns != self.columns:
            self.columns = columns
            self._drawn.clear()
        self._rows = {key: cells for key, cells in rows}
        self._order = [key for key, _ in rows]
        for key in list(self._drawn):
            if key not in self._rows:
                del self._drawn[key]
        self._resized()

    def set_columns(self, columns: Sequence[Column]) -> None:
        """New columns (or widths) for the rows already held: every row is drawn again."""
        columns = list(columns)
        if columns != self.columns:
            self.columns = columns
            self._drawn.clear()
            self._resized()

    def put(self, key: str, cells: list[Text]) -> None:
        """Add the row `key` at the bottom, or change its cells in place: O(1) however many rows
        are held (the timeline gets a row after most turns of a session)."""
        if key not in self._rows:
            self._order.append(key)
        self._rows[key] = cells
        self._resized()

    def clear_rows(self) -> None:
        self._rows, self._order = {}, []
        self._drawn.clear()
        self.cursor_row = 0
        self._resized()

    def _resized(self) -> None:
        # The table's size is its pane's (CSS), never its content's: a wider figure changes only the
        # scroll range, set without arranging the screen (as the conversation's, container._sized).
        size = Size(sum(w + 2 * self.cell_padding for _, _, w in self.columns), len(self._order) + 1)
        if size != self.virtual_size:
            self.set_reactive(ScrollView.virtual_size, size)
            self._scroll_update(size)
        self.refresh()

    @property
    def row_count(self) -> int:
        return len(self._order)

    def get_row(self, key: str) -> list[Text]:
        return self._rows[key]

    def get_row_at(self, index: int) -> list[Text]:
        return self._rows[self._order[index]]

    # ----- drawing -------------------------------------------------------------------------------
    def _line(self, cells: Sequence[Text]) -> Text:
        pad = " " * self.cell_padding
        line = Text(no_wrap=True, end="")
        for (_, _, width), cell in zip(self.columns, cells):
            shown = cell.copy()
            shown.truncate(width, overflow="ellipsis")
            if cell.justify in ("right", "center"):
                shown.align(cell.justify, width)        # padded in the cell's style, as Rich draws it
            line.append(pad)
            line.append_text(shown)
            line.append(" " * (width - shown.cell_len) + pad)   # left: the spaces after it carry no style
        return line

    def _row_strip(self, key: str) -> Strip:
        cells = self._rows[key]
        drawn_from = tuple((c.plain, str(c.style), c.justify, tuple(c.spans)) for c in cells)
        hit = self._drawn.pop(key, None)
        if hit is None or hit[0] != drawn_from:
            hit = (drawn_from, self._strip(self._line(cells)))
        self._drawn[key] = hit                  # the newest drawn last: the oldest go first
        while len(self._drawn) > DRAWN_ROWS:
            del self._drawn[next(iter(self._drawn))]
        return hit[1]

    def _strip(self, text: Text, style=None) -> Strip:
        console = self.app.console
        segments = list(text.render(console))
        strip = Strip(segments, text.cell_len)
        return strip.apply_style(style) if style is not None else strip

    def _past_header(self, header: Style) -> Style:
        """The header row past the last column: its colour faded a quarter into the background
        (as DataTable draws it)."""
        if header.bgcolor is None:
            return Style(color=header.color)
        faded = Color.from_rich_color(header.bgcolor).blend(self.background_colors[1], factor=0.25)
        return Style(color=header.color, bgcolor=faded.rich_color)

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.scrollable_content_region.width
        base = self.rich_style
        if y == 0:
            header = self.get_component_rich_style("figure-table--header")
            hit = self._header
            if hit is None or hit[0] != (self.columns, header):     # drawn again on new columns or theme
                hit = self._header = ((self.columns, header),
                                      self._strip(self._line([label for _, label, _ in self.columns]), header))
            past = self._past_header(header)
            return hit[1].crop_extend(scroll_x, scroll_x + width, past).apply_style(base).simplify()
        index = scroll_y + y - 1
        if not 0 <= index < len(self._order):
            return Strip([Segment(" " * width, base)], width)
        strip = self._row_strip(self._order[index])
        line = strip.crop_extend(scroll_x, scroll_x + width, base).apply_style(base)
        if self.show_cursor and index == self.cursor_row:    # over the cells' own colours, as DataTable's
            cursor = self.get_component_rich_style("figure-table--cursor")
            line = Strip(Segment.apply_style(list(line), post_style=cursor), line.cell_length)
        return line.simplify().apply_meta({"row": index})
