"""The compaction timeline, one table for the TUI and `ctxtui watch`: one row per compaction
(time, layer, trigger, tokens, duration, and in the TUI what rewriting the prompt cache cost, when
the layer said) and per breaker trip, newest at the bottom. A row can be
completed in place: a Claude Code compaction learns its "after" count only with the next response
(shown as "…" until then). The two screens pick which columns they have room for."""
from __future__ import annotations

from typing import Callable

from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.message import Message

from compaction.clock import now as clock_now

from agent_core.events import BreakerTripped, Compaction
from agent_core.watch.state import CompactionView
from agent_core.security.visible_text import one_line

from app import format as fmt
from app.widgets.figure_table import FigureTable

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
    """A cell of someone else's words (a Claude Code log's layer or trigger), as Text with every
    control character shown: never parsed as markup, so `[@click=app.quit]` in a log stays text."""
    return Text(one_line(text))


def _tokens(n: int | None, unknown: str) -> str:
    return unknown if n is None else fmt.short_tokens(n)


def _cache_cost(cache: dict | None) -> str:
    """The extra dollars the rewrite put on the next call ("" when the layer said nothing)."""
    cost = cache.get("cost_usd") if isinstance(cache, dict) else None
    if not isinstance(cost, (int, float)) or isinstance(cost, bool):
        return ""
    return fmt.signed_usd(float(cost))


class Timeline(FigureTable, can_focus=True):
    """See module docstring. `clock` is injectable so tests and snapshots show fixed times. A click
    on a compaction's row, or Enter on the row under the cursor, posts `CompactionSelected` (the
    TUI opens the inspector). The row cursor shows only while the table has focus (Tab to it, or
    click it), starting on the newest row — when `selectable` (the TUI; watch has no inspector).

    Drawn with the line API (FigureTable): a new row draws one line, where Textual's DataTable
    drew every shown row again (6.5 ms of a demo turn's frames)."""

    BINDINGS = [Binding("enter", "inspect", "Inspect", show=False),
                Binding("up", "cursor(-1)", show=False), Binding("down", "cursor(1)", show=False),
                Binding("pageup", "cursor(-10)", show=False), Binding("pagedown", "cursor(10)", show=False),
                Binding("home", "cursor(-1_000_000)", show=False), Binding("end", "cursor(1_000_000)", show=False)]
    DEFAULT_CSS = """
    Timeline:focus { background-tint: $foreground 5%; }
    """

    class CompactionSelected(Message):
        def __init__(self, compaction: Compaction) -> None:
            self.compaction = compaction
            super().__init__()

    def __init__(self, *, columns: tuple[str, ...] = TUI_COLUMNS, clock: Callable[[], float] = clock_now,
                 id: str | None = None, selectable: bool = False) -> None:
        super().__init__(id=id, cell_padding=1)
        self.columns_shown = columns
        self.clock = clock
        self.selectable = selectable               # rows open the inspector (the TUI; watch has none)
        self.count = 0
        self.breaker_trips = 0
        self.events: dict[str, Compaction] = {}     # row key -> the compaction it shows
        self.short = False                          # short layer names and HH:MM (a narrow pane)
        self._args: dict[str, dict] = {}    # row key -> what `show_row` was given, to draw it again in other names
        self._widths: dict[str, int] = {}   # column -> the width of its widest cell so far (it only grows)
        self._labels = {key: Text(key, justify="right" if key in _NUMERIC else "left") for key in columns}
        self._set_widths()

    def on_mount(self) -> None:
        self.border_title = "Compactions"

    def _set_widths(self) -> None:
        self.set_columns([(key, label, max(label.cell_len, self._widths.get(key, 0)))
                          for key, label in self._labels.items()])

    def show_row(self, key: str, *, at: float | None, layer: str | Text, trigger: str | Text,
             before: int | None = None, after: int | None = None, took: float | None = None,
             unknown: str = "…", cache: dict | None = None) -> None:
        """Add the row `key`, or complete it in place when it is already shown. `unknown` stands
        for a count not known yet ("…") or one that does not apply ("—")."""
        freed = None if before is None or after is None else max(0, before - after)
        self._args[key] = dict(at=at, layer=layer, trigger=trigger, before=before, after=after, took=took,
                               unknown=unknown, cache=cache)
        cells = {"time": Text(self._time(at)),
                 "layer": self._layer(layer),
                 "trigger": trigger if isinstance(trigger, Text) else cell(fmt.one_line(str(trigger), 8)),
                 "before": Text(_tokens(before, unknown), justify="right"),
                 "after": Text(_tokens(after, unknown), justify="right"),
                 "freed": Text(_tokens(freed, unknown), justify="right"),
                 "took": Text("—" if took is None else fmt.duration(took), justify="right"),
                 "cache": Text(_cache_cost(cache), justify="right")}
        row = [cells[c] for c in self.columns_shown]
        wider = False
        for c, text in zip(self.columns_shown, row):
            if text.cell_len > self._widths.get(c, 0):
                self._widths[c], wider = text.cell_len, True
        if wider:
            self._set_widths()
        new = key not in self._rows
        self.put(key, row)
        if new:
            self.scroll_end(animate=False, immediate=True)

    def _time(self, at: float | None) -> str:
        return fmt.clock(at)[:5] if self.short and at is not None else fmt.clock(at)

    def _layer(self, layer: str | Text) -> Text:
        return layer if isinstance(layer, Text) else cell(layer_name(layer, self.short))

    def _fit(self) -> None:
        """Short names when the pane cannot show the widest row whole; full names where it can."""
        short = "layer" in self.columns_shown and self.scrollable_content_region.width < FULL_WIDTH
        if short == self.short:
            return
        self.short = short
        self.tooltip = SHORT_LEGEND if short else None
        self._widths.clear()            # measured again in the other names
        for key, args in list(self._args.items()):
            self.show_row(key, **args)
        self._set_widths()

    def on_resize(self) -> None:
        """Shown again (the sidebar toggled back) or resized: the newest rows, not the oldest, in
        names that fit."""
        self._fit()
        self.scroll_end(animate=False, immediate=True)

    def add_compaction(self, c: Compaction, at: float | None = None, resumed: bool = False) -> None:
        """`resumed`: from a resumed session; its time is the event's own when it carries one
        (older logs do not: "—" is shown)."""
        if at is None:
            at = (c.timestamp or None) if resumed else self.clock()
        self.count += 1
        self.events[f"c{self.count}"] = c
        self.show_row(f"c{self.count}", at=at, layer=c.layer, trigger=c.trigger, before=c.tokens_before,
                  after=c.tokens_after, took=c.duration_s, cache=c.cache)

    def add_breaker(self, b: BreakerTripped, at: float | None = None) -> None:
        # The reason is long; it is in the conversation (and the session log). Here: which breaker.
        self.breaker_trips += 1
        self.count += 1
        self.show_row(f"c{self.count}", at=at if at is not None else self.clock(),
                  layer=Text("breaker", style="bold red"), trigger=Text(fmt.one_line(str(b.breaker), 8), style="red"),
                  unknown="—")

    def add_view(self, v: CompactionView) -> None:
        """A compaction read from a log (watch), new or completing its row."""
        self.show_row(v.key, at=v.timestamp, layer=v.layer, trigger=v.trigger, before=v.tokens_before,
                  after=v.tokens_after)

    def on_click(self, event: events.Click) -> None:
        row = event.style.meta.get("row")
        if isinstance(row, int) and 0 <= row < self.row_count:
            if self.show_cursor:
                self._move_to(row)
            self._select(row)

    def on_focus(self) -> None:
        if not self.selectable:
            return
        self.show_cursor = True
        self._move_to(max(0, self.row_count - 1))

    def on_blur(self) -> None:
        self.show_cursor = False
        self.refresh()

    def action_cursor(self, step: int) -> None:
        if self.show_cursor and self.row_count:
            self._move_to(max(0, min(self.row_count - 1, self.cursor_row + step)))

    def _move_to(self, row: int) -> None:
        """The cursor on `row`, scrolled into view (the header keeps the first line)."""
        self.cursor_row = row
        shown = max(1, self.scrollable_content_region.height - 1)
        if row < self.scroll_y:
            self.scroll_to(y=row, animate=False, immediate=True)
        elif row >= self.scroll_y + shown:
            self.scroll_to(y=row - shown + 1, animate=False, immediate=True)
        self.refresh()

    def action_inspect(self) -> None:
        if self.show_cursor and 0 <= self.cursor_row < self.row_count:
            self._select(self.cursor_row)

    def _select(self, row: int) -> None:
        c = self.events.get(self._order[row])
        if c is not None:
            self.post_message(self.CompactionSelected(c))

    def reset(self) -> None:
        self.clear_rows()
        self._args.clear()
        self._widths.clear()
        self._set_widths()
        self.events.clear()
        self.count = 0
        self.breaker_trips = 0
