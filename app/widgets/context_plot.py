"""Context over turns as bars, compaction points marked: the context pane's plot, also the /context screen's."""
from __future__ import annotations

from rich.style import Style
from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

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
        # Each row is built as runs of one style (one span per run, not one per column): a span per
        # character made this small plot cost more to draw than the whole conversation.
        bars: list[list[tuple[str, Style]]] = [[] for _ in range(rows)]
        marks: list[tuple[str, Style]] = []
        for _turn, tokens, compacted in pts:
            eighths = max(1 if tokens else 0, min(8 * rows, round(tokens / window * 8 * rows)))
            style = comp if compacted else (over if self.threshold and tokens >= self.threshold else bar)
            for row, line in enumerate(bars):   # row 0 is the top one
                line.append((BARS[min(8, max(0, eighths - 8 * (rows - 1 - row)))], style))
            marks.append(("◆" if compacted else "·", comp if compacted else axis))
        first, last = pts[0][0], pts[-1][0]
        n = self.compactions if self.compactions is not None else sum(1 for p in pts if p[2])
        caption = Text(f"{len(pts)} updates, turns {first}–{last} · ◆ {n} compaction{'s' if n != 1 else ''}", axis)
        return Text("\n").join([*(_runs(line) for line in bars), _runs(marks), caption])


def _runs(cells: list[tuple[str, Style]]) -> Text:
    """One line of (character, style) cells as a Text with a span per run of one style."""
    text = Text()
    run, style = "", Style.null()
    for char, cell_style in cells:
        if cell_style is not style and run:
            text.append(run, style)
            run = ""
        run, style = run + char, cell_style
    if run:
        text.append(run, style)
    return text
