"""The transcript viewer's list of records: virtual, only the visible lines are rendered.

A log's text is someone else's bytes: each field goes through `agent_core.security.visible_text`
before it becomes a Segment (segments go to the terminal as they are)."""
from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from agent_core.security.visible_text import one_line

from agent_core.logs.transcript_files import Record


class RecordList(ScrollView, can_focus=True):
    """A virtual list of records: only the visible lines are rendered, so 500,000 records scroll
    as fast as 50. Holds indices into the viewer's records (the current filter)."""

    COMPONENT_CLASSES = {"records--cursor", "records--boundary", "records--match", "records--dim"}
    DEFAULT_CSS = """
    RecordList > .records--cursor { background: $block-cursor-background; color: $block-cursor-foreground; }
    RecordList > .records--boundary { color: $accent; text-style: bold; }
    RecordList > .records--dim { color: $foreground-muted; }
    """
    BINDINGS = [
        Binding("up", "move(-1)", "Up", show=False),
        Binding("down", "move(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "jump(0)", "First", show=False),
        Binding("end", "jump(-1)", "Last", show=False),
    ]

    cursor: reactive[int] = reactive(0)

    class CursorMoved(Message):
        def __init__(self, index: int) -> None:
            super().__init__()
            self.index = index

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.records: list[Record] = []
        self.rows: list[int] = []

    def set_rows(self, records: list[Record], rows: list[int]) -> None:
        self.records = records
        self.rows = rows
        self.virtual_size = Size(0, len(rows))   # one line per record; long lines are cut (detail below)
        if self.cursor >= len(rows):
            self.cursor = max(0, len(rows) - 1)
        self.refresh()

    def validate_cursor(self, value: int) -> int:
        return max(0, min(value, len(self.rows) - 1)) if self.rows else 0

    def watch_cursor(self, value: int) -> None:
        self.scroll_to_region_visible(value)
        self.refresh()
        self.post_message(self.CursorMoved(value))

    def scroll_to_region_visible(self, row: int) -> None:
        top = self.scroll_offset.y
        height = max(1, self.scrollable_content_region.height)
        if row < top:
            self.scroll_to(y=row, animate=False)
        elif row >= top + height:
            self.scroll_to(y=row - height + 1, animate=False)

    def action_move(self, delta: int) -> None:
        self.cursor += delta

    def action_page(self, direction: int) -> None:
        self.cursor += direction * max(1, self.scrollable_content_region.height - 1)

    def action_jump(self, where: int) -> None:
        self.cursor = where if where >= 0 else len(self.rows) - 1

    def current(self) -> Record | None:
        if 0 <= self.cursor < len(self.rows):
            return self.records[self.rows[self.cursor]]
        return None

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        row = scroll_y + y
        width = self.size.width
        base = self.rich_style
        if row >= len(self.rows):
            return Strip.blank(width, base)
        r = self.records[self.rows[row]]
        dim = self._fg("records--dim")
        style = self._fg("records--boundary") if r.boundary else Style()
        # Segments go to the terminal as they are: a log's text must not carry a live escape.
        segments = [Segment(f"{r.line:>7} ", dim), Segment(f"{one_line(r.time):<9}", dim),
                    Segment(f"{one_line(r.kind):<11}", style + Style(bold=True)), Segment(one_line(r.summary), style)]
        strip = Strip(segments).crop_extend(scroll_x, scroll_x + width, None).apply_style(base)
        if row == self.cursor:
            cursor = self.get_component_rich_style("records--cursor")
            strip = Strip([Segment(text, (st or Style()) + cursor, ctl) for text, st, ctl in strip], strip.cell_length)
        return strip

    def _fg(self, name: str) -> Style:
        """A component style's colour and weight only: the row's background comes from the widget
        (or the cursor), never from each piece of text."""
        st = self.get_component_rich_style(name)
        return Style(color=st.color, bold=st.bold, italic=st.italic)
