"""The compaction timeline, one table for the TUI and `ctxtui watch`: one row per compaction
(time, layer, trigger, tokens, duration, and in the TUI what rewriting the prompt cache cost, when
the layer said) and per breaker trip, newest at the bottom. A row can be
completed in place: a Claude Code compaction learns its "after" count only with the next response
(shown as "…" until then). The two screens pick which columns they have room for."""
from __future__ import annotations

from typing import Callable

from rich.text import Text
from textual.binding import Binding
from textual.geometry import Size
from textual import events
from textual.message import Message
from textual.reactive import Reactive
from textual.widgets import DataTable

from compaction.clock import now as clock_now

from agent_core.events import BreakerTripped, Compaction
from agent_core.watch.state import CompactionView
from agent_core.security.visible_text import one_line

from app import format as fmt
from app.widgets.table_caches import bound_render_caches

# The side pane has room for five columns: what the prefix rewrite cost is shown rather than how long
# the compaction took (the conversation's marker says both).
TUI_COLUMNS = ("time", "layer", "trigger", "freed", "cache")
WATCH_COLUMNS = ("time", "layer", "trigger", "before", "after", "freed")
_NUMERIC = frozenset({"before", "after", "freed", "took", "cache"})
# ctxtui's layer names, spelled out in words so the column never cuts one (`session_mem…`); any
# other name (a Claude Code log's) is shown whole.
LAYER_NAMES = {"tool_result_budget": "result budget", "session_memory": "session memory",
               "server_clear_tool_uses": "server clear", "server_clear_thinking": "server thinking",
               "server_compact": "server compact"}


# Narrower names for a narrow pane (the 50-column sidebar at 120 columns); the tooltip is their legend.
SHORT_NAMES = {"tool_result_budget": "results", "session_memory": "memory", "microcompact": "micro",
               "server_clear_tool_uses": "srv clear", "server_clear_thinking": "srv think",
               "server_compact": "srv compact"}
SHORT_LEGEND = ("results = tool-result budget · memory = session memory · micro = microcompact · "
                "srv = server-side; times are HH:MM")
# Cells of the widest likely row (time, "session memory", "reactive", "144k", "-$0.0111") with padding:
# a table narrower than this switches to the short names and HH:MM.
FULL_WIDTH = 10 + 16 + 10 + 7 + 10


def layer_name(layer: str, short: bool = False) -> str:
    if short and layer in SHORT_NAMES:
        return SHORT_NAMES[layer]
    return LAYER_NAMES.get(layer, fmt.one_line(str(layer), 40))


def cell(text: str) -> Text:
    """A cell of someone else's words (a Claude Code log's layer or trigger): a DataTable parses a
    plain str cell as Rich markup, so `[@click=app.quit]` in a log would become a link. As Text,
    with every control character shown, it is only ever text."""
    return Text(one_line(text))


def _tokens(n: int | None, unknown: str) -> str:
    return unknown if n is None else fmt.short_tokens(n)


def _cache_cost(cache: dict | None) -> str:
    """The extra dollars the rewrite put on the next call ("" when the layer said nothing)."""
    cost = cache.get("cost_usd") if isinstance(cache, dict) else None
    if not isinstance(cost, (int, float)) or isinstance(cost, bool):
        return ""
    return fmt.signed_usd(float(cost))


class Timeline(DataTable):
    """See module docstring. `clock` is injectable so tests and snapshots show fixed times. A click
    on a compaction's row, or Enter on the row under the cursor, posts `CompactionSelected` (the
    TUI opens the inspector). The row cursor shows only while the table has focus (Tab to it, or
    click it), starting on the newest row — when `selectable` (the TUI; watch has no inspector)."""

    BINDINGS = [Binding("enter", "inspect", "Inspect", show=False)]

    # The table's own size comes from its pane's CSS (a fixed height or a share), never from its
    # rows, so a new row changes only the scroll range. As a layout reactive (Widget's) every
    # compaction laid the whole screen out again, about a quarter of a TUI turn's CPU; the
    # scrollbars are told directly in `watch_virtual_size`, as Textual does when it sizes a
    # widget without a layout.
    virtual_size: Reactive[Size] = Reactive(Size(0, 0), layout=False)

    class CompactionSelected(Message):
        def __init__(self, compaction: Compaction) -> None:
            self.compaction = compaction
            super().__init__()

    def __init__(self, *, columns: tuple[str, ...] = TUI_COLUMNS, clock: Callable[[], float] = clock_now,
                 id: str | None = None, selectable: bool = False) -> None:
        super().__init__(id=id, show_cursor=False, cell_padding=1)
        bound_render_caches(self, columns=len(columns))    # a row per compaction, for thousands of turns
        self.columns_shown = columns
        self.clock = clock
        self.selectable = selectable               # rows open the inspector (the TUI; watch has none)
        self.count = 0
        self.breaker_trips = 0
        self.events: dict[str, Compaction] = {}     # row key -> the compaction it shows
        self.short = False                          # short layer names and HH:MM (a narrow pane)
        self._rows: dict[str, dict] = {}    # row key -> what `show` was given, to draw it again in other names

    def on_mount(self) -> None:
        self.border_title = "Compactions"
        self._add_columns()

    def _add_columns(self) -> None:
        for key in self.columns_shown:
            self.add_column(Text(key, justify="right") if key in _NUMERIC else key, key=key)

    def show(self, key: str, *, at: float | None, layer: str | Text, trigger: str | Text,
             before: int | None = None, after: int | None = None, took: float | None = None,
             unknown: str = "…", cache: dict | None = None) -> None:
        """Add the row `key`, or complete it in place when it is already shown. `unknown` stands
        for a count not known yet ("…") or one that does not apply ("—")."""
        freed = None if before is None or after is None else max(0, before - after)
        self._rows[key] = dict(at=at, layer=layer, trigger=trigger, before=before, after=after, took=took,
                               unknown=unknown, cache=cache)
        cells = {"time": self._time(at),
                 "layer": self._layer(layer),
                 "trigger": trigger if isinstance(trigger, Text) else cell(fmt.one_line(str(trigger), 8)),
                 "before": Text(_tokens(before, unknown), justify="right"),
                 "after": Text(_tokens(after, unknown), justify="right"),
                 "freed": Text(_tokens(freed, unknown), justify="right"),
                 "took": Text("—" if took is None else fmt.duration(took), justify="right"),
                 "cache": Text(_cache_cost(cache), justify="right")}
        self._hold_width("time", cells["time"])
        self._hold_width("layer", cells["layer"])
        if key in self.rows:
            for col in self.columns_shown:
                self.update_cell(key, col, cells[col], update_width=True)
            return
        self.add_row(*(cells[c] for c in self.columns_shown), key=key)

    def _hold_width(self, key: str, value: str | Text) -> None:
        """The time and layer columns at the width of their widest cell, set now: measured lazily
        (on idle) the table now and then drew a row with the column still at an earlier width, a
        layer name cut to five letters."""
        column = self.columns.get(key)   # type: ignore[call-overload]
        if column is None:
            return
        width = Text(value).cell_len if isinstance(value, str) else value.cell_len
        label = column.label.cell_len
        column.width = max(column.width if not column.auto_width else label, width, label)
        column.auto_width = False
        self.scroll_end(animate=False)

    def _time(self, at: float | None) -> str:
        return fmt.clock(at)[:5] if self.short and at is not None else fmt.clock(at)

    def _layer(self, layer: str | Text) -> str | Text:
        return layer if isinstance(layer, Text) else cell(layer_name(layer, self.short))

    def _fit(self) -> None:
        """Short names when the pane cannot show the widest row whole; full names where it can."""
        short = "layer" in self.columns_shown and self.scrollable_content_region.width < FULL_WIDTH
        if short == self.short:
            return
        self.short = short
        self.tooltip = SHORT_LEGEND if short else None
        # Drawn again from scratch: cells updated in place kept a column at an earlier width now and
        # then (a layer name or a time cut short), as the table measures them lazily.
        cursor = self.cursor_row
        self.clear(columns=True)
        self._add_columns()
        for key, args in list(self._rows.items()):
            self.show(key, **args)
        if self.show_cursor and self.row_count:
            self.move_cursor(row=min(cursor, self.row_count - 1), animate=False)

    def watch_virtual_size(self, old: Size, new: Size) -> None:
        """Keep the newest row in view. The table learns its new height only when idle, after the
        row was added, so a scroll at `add_row` time stops short (and at mount, on the oldest rows)."""
        self._scroll_update(new)
        if new.height > old.height:
            self.scroll_end(animate=False)

    def on_resize(self) -> None:
        """Shown again (the sidebar toggled back) or resized: the newest rows, not the oldest, in
        names that fit."""
        self._fit()
        self.scroll_end(animate=False)

    def add_compaction(self, c: Compaction, at: float | None = None, resumed: bool = False) -> None:
        """`resumed`: from a resumed session; its time is the event's own when it carries one
        (older logs do not: "—" is shown)."""
        if at is None:
            at = (c.timestamp or None) if resumed else self.clock()
        self.count += 1
        self.events[f"c{self.count}"] = c
        self.show(f"c{self.count}", at=at, layer=c.layer, trigger=c.trigger, before=c.tokens_before,
                  after=c.tokens_after, took=c.duration_s, cache=c.cache)

    def add_breaker(self, b: BreakerTripped, at: float | None = None) -> None:
        # The reason is long; it is in the conversation (and the session log). Here: which breaker.
        self.breaker_trips += 1
        self.count += 1
        self.show(f"c{self.count}", at=at if at is not None else self.clock(),
                  layer=Text("breaker", style="bold red"), trigger=Text(fmt.one_line(str(b.breaker), 8), style="red"),
                  unknown="—")

    def add_view(self, v: CompactionView) -> None:
        """A compaction read from a log (watch), new or completing its row."""
        self.show(v.key, at=v.timestamp, layer=v.layer, trigger=v.trigger, before=v.tokens_before,
                  after=v.tokens_after)

    def on_click(self, event: events.Click) -> None:
        row = event.style.meta.get("row")
        if isinstance(row, int) and 0 <= row < self.row_count:
            self._select(row)

    def on_focus(self) -> None:
        if not self.selectable:
            return
        self.cursor_type, self.show_cursor = "row", True
        if self.row_count:
            self.move_cursor(row=self.row_count - 1, animate=False)

    def on_blur(self) -> None:
        self.show_cursor = False

    def action_inspect(self) -> None:
        if self.show_cursor and 0 <= self.cursor_row < self.row_count:
            self._select(self.cursor_row)

    def _select(self, row: int) -> None:
        c = self.events.get(str(self.ordered_rows[row].key.value))
        if c is not None:
            self.post_message(self.CompactionSelected(c))

    def reset(self) -> None:
        self.clear()
        self._rows.clear()
        self.events.clear()
        self.count = 0
        self.breaker_trips = 0
