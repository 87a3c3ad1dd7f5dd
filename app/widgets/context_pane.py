"""The context pane, always visible: a gauge of tokens against the window with the auto-compact
threshold marked, the exact numbers, the state by colour and word, the category breakdown, and a
plot of context over turns with compaction points.

Everything shown comes from a `ContextUpdate` (tokens, window, thresholds, state, percent left,
categories) and the loop's `context_history`; the pane computes nothing but cell positions.
"""
from __future__ import annotations

from typing import Sequence

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.reactive import reactive
from textual.widgets import Static

from agent_core.events import ContextUpdate
from agent_core.security.visible_text import one_line

from app import format as fmt
from app.widgets.context_plot import ContextPlot
from app.widgets.gauge import Gauge

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
    "tools": ("Tool definitions", "Tools", "$secondary"),
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

    def compose(self) -> ComposeResult:
        yield Static(id="ctx-state")
        yield Gauge(id="ctx-gauge")
        yield Static(id="ctx-numbers")
        yield Static(id="ctx-breakdown")
        yield ContextPlot(id="ctx-plot")

    def on_mount(self) -> None:
        self.border_title = "Context"
        self._render_context(self.context)

    def watch_context(self, c: ContextUpdate | None) -> None:
        self._render_context(c)

    def watch_history(self, points: tuple[tuple[int, int, bool], ...]) -> None:
        if self.is_mounted:
            self.query_one(ContextPlot).points = tuple(points)

    def watch_compactions(self, n: int | None) -> None:
        if self.is_mounted:
            self.query_one(ContextPlot).compactions = n

    @property
    def state(self) -> str:
        return self.context.state if self.context else "ok"

    def _render_context(self, c: ContextUpdate | None) -> None:
        if not self.is_mounted:
            return
        state = c.state if c else "ok"
        for s in STATES:
            self.set_class(s == state, f"-{s}")
        word = one_line(STATE_WORDS.get(state, state.upper()))
        self.query_one("#ctx-state", Static).update(
            Content.assemble(("● ", STATE_VARS.get(state, "$foreground")), (word, f"bold {STATE_VARS.get(state, '')}")))
        gauge = self.query_one(Gauge)
        plot = self.query_one(ContextPlot)
        if c is None:
            self.query_one("#ctx-numbers", Static).update(Content("no context yet"))
            self.query_one("#ctx-breakdown", Static).update("")
            return
        gauge.window, gauge.threshold, gauge.tokens = c.window, c.threshold, c.tokens
        plot.window, plot.threshold = c.window, c.threshold
        numbers = Content.assemble(
            (fmt.tokens(c.tokens), "bold"), f" / {fmt.tokens(c.window)} tokens ",
            (one_line(SOURCE_WORDS.get(c.source, c.source)), "italic $foreground-muted"), "\n",
            (fmt.percent(c.percent_left), f"bold {STATE_VARS.get(state, '')}"),
            f" left until auto-compact at {fmt.tokens(c.threshold)}")
        self.query_one("#ctx-numbers", Static).update(numbers)
        self.query_one("#ctx-breakdown", Static).update(self._breakdown(c.categories))

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
