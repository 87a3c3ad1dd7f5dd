"""The context pane, always visible: a gauge of tokens against the window with the auto-compact
threshold marked, the exact numbers, the state by colour and word, the category breakdown, and a
plot of context over turns with compaction points.

Everything shown comes from a `ContextUpdate` (tokens, window, thresholds, state, percent left,
categories) and the loop's `context_history`; the pane computes nothing but cell positions.
"""
from __future__ import annotations

from typing import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Static

from agent_core.events import ContextUpdate
from agent_core.security.visible_text import one_line

from app import format as fmt

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


class Gauge(Widget):
    """One line: used tokens filled, the auto-compact threshold as ┃, the zone past it shaded."""

    COMPONENT_CLASSES = {"gauge--fill", "gauge--empty", "gauge--threshold", "gauge--buffer"}
    DEFAULT_CSS = """
    Gauge { height: 1; }
    Gauge > .gauge--fill { color: $success; }
    Gauge > .gauge--empty { color: $foreground 20%; }
    Gauge > .gauge--buffer { color: $error 40%; }
    Gauge > .gauge--threshold { color: $text; text-style: bold; }
    """

    tokens: reactive[int] = reactive(0)
    window: reactive[int] = reactive(1)
    threshold: reactive[int] = reactive(0)

    def render(self) -> Text:
        width = max(1, self.size.width)
        window = max(1, self.window)
        filled = min(width, round(self.tokens / window * width))
        mark = min(width - 1, int(self.threshold / window * width)) if self.threshold else -1
        fill = self.get_component_rich_style("gauge--fill")
        empty = self.get_component_rich_style("gauge--empty")
        buffer = self.get_component_rich_style("gauge--buffer")
        thr = self.get_component_rich_style("gauge--threshold")
        text = Text()
        for i in range(width):
            if i == mark:
                text.append("┃", thr)
            elif i < filled:
                text.append("█", fill)
            elif mark >= 0 and i > mark:
                text.append("▒", buffer)
            else:
                text.append("░", empty)
        return text


BARS = " ▁▂▃▄▅▆▇█"


class ContextPlot(Widget):
    """Context over turns: one column per turn (the latest that fit), bar height against the
    window, turns with a compaction marked ◆ underneath and drawn in the accent colour. The bars
    use every row the plot is given above its two last lines (a tall terminal gets a finer plot)."""

    COMPONENT_CLASSES = {"plot--bar", "plot--over", "plot--compaction", "plot--axis"}
    DEFAULT_CSS = """
    ContextPlot { height: 3; }
    ContextPlot > .plot--bar { color: $primary; }
    ContextPlot > .plot--over { color: $warning; }
    ContextPlot > .plot--compaction { color: $accent; text-style: bold; }
    ContextPlot > .plot--axis { color: $foreground-muted; }
    """

    points: reactive[tuple[tuple[int, int, bool], ...]] = reactive(tuple, always_update=True)
    window: reactive[int] = reactive(1)
    threshold: reactive[int] = reactive(0)
    # Compactions in the session (one update can follow several); None: count the marked updates.
    compactions: reactive[int | None] = reactive(None)

    def render(self) -> Text:
        width = max(1, self.size.width)
        pts = self.points[-width:]
        axis = self.get_component_rich_style("plot--axis")
        if not pts:
            return Text("context over turns: no turns yet", axis)
        bar = self.get_component_rich_style("plot--bar")
        over = self.get_component_rich_style("plot--over")
        comp = self.get_component_rich_style("plot--compaction")
        window = max(1, self.window)
        rows = max(1, self.size.height - 2)
        bars, marks = [Text() for _ in range(rows)], Text()
        for _turn, tokens, compacted in pts:
            eighths = max(1 if tokens else 0, min(8 * rows, round(tokens / window * 8 * rows)))
            style = comp if compacted else (over if self.threshold and tokens >= self.threshold else bar)
            for row, line in enumerate(bars):   # row 0 is the top one
                line.append(BARS[min(8, max(0, eighths - 8 * (rows - 1 - row)))], style)
            marks.append("◆" if compacted else "·", comp if compacted else axis)
        first, last = pts[0][0], pts[-1][0]
        n = self.compactions if self.compactions is not None else sum(1 for p in pts if p[2])
        caption = Text(f"{len(pts)} updates, turns {first}–{last} · ◆ {n} compaction{'s' if n != 1 else ''}", axis)
        return Text("\n").join([*bars, marks, caption])


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
