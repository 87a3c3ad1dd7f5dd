"""The gauge draws one span per run of a kind, and exactly the cells the per-cell rule says."""
from __future__ import annotations

from hypothesis import given, settings, strategies as st
from rich.style import Style

from app.widgets.gauge import Gauge

STYLES = {"gauge--fill": Style(color="green"), "gauge--empty": Style(color="grey37"),
          "gauge--buffer": Style(color="red"), "gauge--threshold": Style(bold=True)}


class Bare(Gauge):
    """A gauge without an app: fixed size and component styles."""

    def __init__(self, width: int, tokens: int, window: int, threshold: int) -> None:
        super().__init__()
        self._width = width
        self.set_reactive(Gauge.tokens, tokens)
        self.set_reactive(Gauge.window, window)
        self.set_reactive(Gauge.threshold, threshold)

    @property
    def size(self):  # type: ignore[override]
        from textual.geometry import Size
        return Size(self._width, 1)

    def get_component_rich_style(self, *names: str, partial: bool = False) -> Style:  # type: ignore[override]
        return STYLES[names[0]]


def expected(width: int, tokens: int, window: int, threshold: int) -> list[tuple[str, Style]]:
    """The rule, cell by cell: the threshold mark, filled up to the tokens, the zone past the
    threshold shaded, the rest empty."""
    width, window = max(1, width), max(1, window)
    filled = min(width, round(tokens / window * width))
    mark = min(width - 1, int(threshold / window * width)) if threshold else -1
    out = []
    for i in range(width):
        if i == mark:
            out.append(("┃", STYLES["gauge--threshold"]))
        elif i < filled:
            out.append(("█", STYLES["gauge--fill"]))
        elif mark >= 0 and i > mark:
            out.append(("▒", STYLES["gauge--buffer"]))
        else:
            out.append(("░", STYLES["gauge--empty"]))
    return out


def cells(text) -> list[tuple[str, Style]]:
    out = []
    for i, ch in enumerate(text.plain):
        styles = [span.style for span in text.spans if span.start <= i < span.end]
        assert len(styles) == 1, f"cell {i} has {len(styles)} styles"
        out.append((ch, styles[0]))
    return out


@settings(max_examples=300, deadline=None)
@given(width=st.integers(1, 120), window=st.integers(1, 1_000_000), data=st.data())
def test_the_gauge_draws_the_per_cell_rule_in_runs(width, window, data):
    tokens = data.draw(st.integers(0, 2 * window))
    threshold = data.draw(st.integers(0, window))
    text = Bare(width, tokens, window, threshold).render()
    assert cells(text) == expected(width, tokens, window, threshold)
    assert len(text.spans) <= 4          # empty, fill, mark, buffer (or fill past the mark): never a span per cell


def test_a_full_window_past_the_threshold():
    text = Bare(10, 1_000, 1_000, 800).render()
    assert text.plain == "████████┃█"
