"""The context pane's gauge: one line of tokens against the window, the auto-compact threshold marked."""
from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget


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
        styles = {"thr": thr, "fill": fill, "buffer": buffer, "empty": empty}
        chars = {"thr": "┃", "fill": "█", "buffer": "▒", "empty": "░"}
        # Each cell's kind, then one span per run of a kind (a span a cell made 50 segments to draw)
        kinds = ["thr" if i == mark else "fill" if i < filled else "buffer" if 0 <= mark < i else "empty"
                 for i in range(width)]
        text = Text()
        start = 0
        for i in range(1, width + 1):
            if i == width or kinds[i] != kinds[start]:
                text.append(chars[kinds[start]] * (i - start), styles[kinds[start]])
                start = i
        return text
