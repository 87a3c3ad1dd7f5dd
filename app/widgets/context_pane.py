"""The context pane, always visible: a gauge of tokens against the window with the auto-compact
threshold marked, the exact numbers, the state by colour and word, the category breakdown, and a
plot of context over turns with compaction points.

Everything shown comes from a `ContextUpdate` (tokens, window, thresholds, state, percent left,
categories), the loop's `context_history` and the next request's price the app hands down
(`next_request`, counted down, the typed prompt added); the pane computes nothing but cell positions.
"""
from __future__ import annotations

from typing import Sequence

from rich.cells import cell_len
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.reactive import reactive
from textual.widgets import Static

from agent_core.events import ContextUpdate
from compaction.next_request import NextRequest
from agent_core.security.visible_text import one_line

from app import format as fmt
from app.widgets.context_plot import ContextPlot
from app.widgets.gauge import Gauge
from app.widgets import next_request as next_text
from app.widgets.update_in_place import update_in_place

STATES = ("ok", "warning", "error", "autocompact", "blocking")
STATE_WORDS = {"ok": "OK", "warning": "WARNING", "error": "ERROR", "autocompact": "AUTO-COMPACT",
               "blocking": "BLOCKING"}
# ContextUpdate.source, said after the figure: an estimate, a response's reported usage, or the API's count.
SOURCE_WORDS = {"estimate": "estimated", "usage": "reported", "counted": "counted",
                "server": "reported after the API's own edits"}
STATE_VARS = {"ok": "$success", "warning": "$warning", "error": "$error", "autocompact": "$accent",
              "blocking": "$error"}

# key: (label, short label, colour). Unknown keys are shown with their own name.
CATEGORIES: dict[str, tuple[str, str, str]] = {
    "system": ("System prompt", "System", "$primary"),
    "memory": ("Memory files", "Memory", "$primary-lighten-2"),
    "tools": ("Tool definitions", "Tools", "$secondary"),
    "mcp_tools": ("MCP tools", "MCP tools", "$secondary-lighten-2"),
    "user_text": ("User messages", "User", "$accent"),
    "assistant_text": ("Assistant messages", "Assistant", "$success"),
    "tool_calls": ("Tool calls", "Tool calls", "$warning"),
    "tool_results": ("Tool results", "Results", "$error"),
    "summaries": ("Summaries & attachments", "Summaries", "$text-primary"),
    # What a session log tells of the last response's context (`ctxtui watch`), by token bucket.
    "cache_read": ("Cache reads", "Cached", "$primary"),
    "cache_write": ("Cache writes", "Cache new", "$secondary"),
    "input": ("Uncached input", "Uncached", "$accent"),
    "output": ("Output", "Output", "$success"),
    "estimated": ("Count after compaction", "Estimated", "$text-primary"),
    "free": ("Free space", "Free", "$foreground-muted"),
    "autocompact_buffer": ("Auto-compact buffer", "Buffer", "$foreground-disabled"),
}


def category_meta(key: str) -> tuple[str, str, str]:
    if key in CATEGORIES:
        return CATEGORIES[key]
    shown = one_line(str(key))     # a name the event brought (a log's, in watch): shown, never obeyed
    return shown.replace("_", " ").capitalize(), shown[:10], "$foreground"


def ordered_categories(categories: dict[str, int]) -> list[tuple[str, int]]:
    known = [(k, categories[k]) for k in CATEGORIES if k in categories]
    return known + [(k, v) for k, v in categories.items() if k not in CATEGORIES]


class ContextPane(Vertical):
    """See module docstring. Set `context` (a ContextUpdate) and `history` from the app."""

    context: reactive[ContextUpdate | None] = reactive(None, always_update=True, init=False)
    history: reactive[tuple[tuple[int, int, bool], ...]] = reactive(tuple, always_update=True, init=False)
    compactions: reactive[int | None] = reactive(None, init=False)
    # the next request's price, counted down and with the typed prompt added by the app (None: not known)
    next_request: reactive[NextRequest | None] = reactive(None, init=False)

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        # Held, not queried: the pane renders on every context figure of a long session.
        self._state = Static(id="ctx-state")
        self._gauge = Gauge(id="ctx-gauge")
        self._numbers = Static(id="ctx-numbers")
        self._next = Static(id="ctx-next")
        self._next.display = False          # until the app hands a price down (a log in watch has none)
        self._breakdown_view = Static(id="ctx-breakdown")
        self._plot = ContextPlot(id="ctx-plot")
        self._shown: tuple = ()      # what the Statics show (an unchanged figure is not set again)

    def compose(self) -> ComposeResult:
        yield self._state
        yield self._gauge
        yield self._numbers
        yield self._next
        yield self._breakdown_view
        yield self._plot

    def on_mount(self) -> None:
        self.border_title = "Context"
        self._render_context(self.context)

    def watch_next_request(self, nr: NextRequest | None) -> None:
        self._render_next(nr)

    def _render_next(self, nr: NextRequest | None) -> None:
        if self._next.display != (nr is not None):
            self._next.display = nr is not None
        if nr is not None:
            self._set(self._next, next_text.pane_text(nr))

    def watch_context(self, c: ContextUpdate | None) -> None:
        self._render_context(c)

    def watch_history(self, points: tuple[tuple[int, int, bool], ...]) -> None:
        if self.is_mounted:
            self._plot.points = tuple(points)

    def watch_compactions(self, n: int | None) -> None:
        if self.is_mounted:
            self._plot.compactions = n

    @property
    def state(self) -> str:
        return self.context.state if self.context else "ok"

    def _render_context(self, c: ContextUpdate | None) -> None:
        if not self.is_mounted:
            return
        state = c.state if c else "ok"
        if not self.has_class(f"-{state}") or sum(self.has_class(f"-{s}") for s in STATES) != 1:
            for s in STATES:     # the styles once for the new state, not once per class changed
                self.set_class(s == state, f"-{s}", update=False)
            self.update_node_styles()
        word = one_line(STATE_WORDS.get(state, state.upper()))
        if c is None:
            shown: tuple = (state,)
            if shown != self._shown:
                self._set_state(state, word)
                self._numbers.update(Content("no context yet"))
                self._breakdown_view.update("")
                self._shown = shown
            return
        self._gauge.window, self._gauge.threshold, self._gauge.tokens = c.window, c.threshold, c.tokens
        self._plot.window, self._plot.threshold = c.window, c.threshold
        shown = (state, c.tokens, c.window, c.threshold, c.source, c.percent_left, tuple(c.categories.items()))
        if shown == self._shown:
            return
        if not self._shown or self._shown[0] != state:
            self._set_state(state, word)
        numbers = Content.assemble(
            (fmt.tokens(c.tokens), "bold"), f" / {fmt.tokens(c.window)} tokens ",
            (one_line(SOURCE_WORDS.get(c.source, c.source)), "italic $foreground-muted"), "\n",
            (fmt.percent(c.percent_left), f"bold {STATE_VARS.get(state, '')}"),
            f" left until auto-compact at {fmt.tokens(c.threshold)}")
        self._set(self._numbers, numbers)
        self._set(self._breakdown_view, self._breakdown(c.categories))
        self._shown = shown

    @staticmethod
    def _set(view: Static, content: Content) -> None:
        """Update a Static, laying out only when its height can change: a figure of the same
        lines, none wider than the Static, is a repaint (a long session sets these per update)."""
        old = view.visual
        width = view.content_size.width

        def fits(text: str) -> list[str] | None:
            lines = text.split("\n")
            return lines if all(cell_len(line) <= width for line in lines) else None

        new_lines = fits(content.plain)
        old_lines = fits(old.plain) if isinstance(old, Content) else None
        same = width > 0 and new_lines is not None and old_lines is not None and len(new_lines) == len(old_lines)
        view.update(content, layout=not same)

    def _set_state(self, state: str, word: str) -> None:
        # the state word changes about every turn in a compacting session: a repaint, not a layout
        update_in_place(self._state, Content.assemble(("● ", STATE_VARS.get(state, "$foreground")),
                                                      (word, f"bold {STATE_VARS.get(state, '')}")))

    @staticmethod
    def _breakdown(categories: dict[str, int]) -> Content:
        items = ordered_categories(categories)
        cells = []
        for key, n in items:
            _label, short, colour = category_meta(key)
            cells.append(Content.assemble(("■ ", colour), f"{short:<10}", f"{fmt.short_tokens(n):>6}"))
        rows = []
        for i in range(0, len(cells), 2):
            pair = cells[i:i + 2]
            rows.append(Content("  ").join(pair))
        return Content("\n").join(rows)


def history_points(history: Sequence) -> tuple[tuple[int, int, bool], ...]:
    """Normalise the loop's `context_history` (turn, tokens, compacted) into the plot's tuples."""
    return tuple((int(t), int(n), bool(c)) for t, n, c in history)
