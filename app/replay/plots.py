"""The two `ctxtui replay` plots, drawn with textual-plotext: context per request, cumulative dollars.

Each plot keeps what it last drew (`lines`, `markers`, `hlines`) so tests and callers can check
the data without reading pixels. One colour per policy, in the report's policy order, the same
in both plots.
"""
from __future__ import annotations

import math

from textual_plotext import PlotextPlot

from agent_core.replay.report_model import SessionResult
from agent_core.security.visible_text import one_line

from app import format as fmt

COLORS = ("red", "blue+", "green+", "magenta+", "cyan", "orange", "yellow")
WINDOW_COLOR = "gray"
MARKER_GLYPHS = "◆●▲■✚✱"
CLIP = 2.0     # the context axis stops at this many windows: a never-compacting policy would flatten the rest
FAR = 3.0      # a window this many times the largest context is left off the chart (it would flatten the lines)


def policy_color(name: str, order: tuple[str, ...]) -> str:
    i = order.index(name) if name in order else len(order)
    return COLORS[i % len(COLORS)]


def nice_ticks(top: float, count: int = 4) -> list[float]:
    """0 and about `count` round steps (1, 2, 2.5, 3, 4, 5, 6 or 8 × a power of ten) reaching at least `top`."""
    if top <= 0:
        return [0.0, 1.0]
    raw = top / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 3, 4, 5, 6, 8, 10) if m * power >= raw)
    n = math.ceil(top / step - 1e-9)
    return [i * step for i in range(n + 1)]


def request_ticks(n: int) -> list[int]:
    """A few whole request numbers along the x axis (1-based, as a person counts requests)."""
    if n <= 1:
        return [1]
    step = max(1, int(nice_ticks(n - 1, 5)[1]))
    ticks = list(range(1, n + 1, step))
    return ticks if ticks[-1] == n or n - ticks[-1] < step / 2 else [*ticks, n]


class ReplayPlot(PlotextPlot):
    """A PlotextPlot that remembers its series. Subclasses say what to draw for a session."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.lines: dict[str, list[float]] = {}                 # policy -> y per request
        self.markers: dict[str, list[tuple[int, float]]] = {}   # policy -> (request number, y)
        self.hlines: list[float] = []
        self.glyphs: dict[str, str] = {}                         # layer -> marker glyph
        self.y_top = 0.0                                         # where the y axis ends
        self.heading = ""                                        # the plot's title

    def _start(self, title: str) -> None:
        plt = self.plt
        plt.clear_figure()
        plt.title(title)
        self.heading = title
        plt.xlabel("request")
        self.lines, self.markers, self.hlines = {}, {}, []

    def _line(self, name: str, ys: list[float], color: str) -> None:
        xs = list(range(1, len(ys) + 1))
        if xs:
            self.plt.plot(xs, ys, label=one_line(name), color=color, marker="braille")
        self.lines[name] = ys

    def _axes(self, top: float, count: int, label) -> None:
        ticks = nice_ticks(top)
        self.y_top = ticks[-1]
        self.plt.yticks(ticks, [label(t) for t in ticks])
        self.plt.ylim(0, ticks[-1])
        xt = request_ticks(count)
        positions: list[float] = list(xt)
        self.plt.xticks(positions, [str(x) for x in xt])
        if count:
            self.plt.xlim(1, max(count, 2))


class ReplayContextPlot(ReplayPlot):
    """Tokens sent per request, one line per policy, the window as a horizontal line and each
    compaction as a glyph on its policy's line (one glyph per layer)."""

    def show(self, session: SessionResult, window: int | None, order: tuple[str, ...]) -> None:
        highest = max((max(p.context, default=0) for p in session.policies.values()), default=0)
        far = clipped = False
        top: float = max(highest, 1)
        if window:
            far = window > FAR * max(highest, 1)
            top = max(highest, 1 if far else window, 1)
            clipped = top > CLIP * window
            if clipped:
                top = CLIP * window
        title = "context tokens per request"
        if far:
            title += f" · window {fmt.short_tokens(window)} far above"
        elif window:
            title += f" · ─ window {fmt.short_tokens(window)}"
        if clipped:
            title += f" · cut at {fmt.short_tokens(top)}"
        self._start(title)
        plt = self.plt
        layers = sorted({layer for p in session.policies.values() for _, layer in p.markers})
        glyph = {layer: MARKER_GLYPHS[i % len(MARKER_GLYPHS)] for i, layer in enumerate(layers)}
        count = 0
        for name, p in session.policies.items():
            color = policy_color(name, order)
            self._line(name, [float(v) for v in p.context], color)
            count = max(count, len(p.context))
        for name, p in session.policies.items():
            points = [(i + 1, float(p.context[i]), layer) for i, layer in p.markers if 0 <= i < len(p.context)]
            self.markers[name] = [(x, y) for x, y, _ in points]
            for layer in layers:
                pts = [(x, y) for x, y, at in points if at == layer]
                if pts:
                    plt.scatter([x for x, _ in pts], [y for _, y in pts], marker=glyph[layer],
                                color=policy_color(name, order))
        if window and not far:
            plt.horizontal_line(window, color=WINDOW_COLOR)
            self.hlines.append(float(window))
        self._axes(top, count, fmt.short_tokens)
        self.glyphs = glyph
        self.refresh()


class ReplayCostPlot(ReplayPlot):
    """Cumulative dollars per request, one line per policy."""

    def show(self, session: SessionResult, order: tuple[str, ...]) -> None:
        self._start("cumulative $ per request")
        count = 0
        for name, p in session.policies.items():
            self._line(name, list(p.cost_cum), policy_color(name, order))
            count = max(count, len(p.cost_cum))
        top = max([*(max(v, default=0) for v in self.lines.values()), 0.01])
        self._axes(top, count, _dollars)
        self.refresh()


def _dollars(x: float) -> str:
    if x == 0:
        return "$0"
    return f"${x:.2f}" if x < 10 else f"${x:,.0f}"
