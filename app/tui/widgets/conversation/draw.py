"""Drawing a conversation record as lines: the few shapes every block is made of.

The conversation is one line-API widget (container.py): each record (a prompt, an answer, a
tool call, ...) draws itself into strips at a width, once, and the widget hands out the lines the
screen asks for. These helpers make the shapes the blocks share: a wrapped paragraph on a
background with padding and an optional bar on its left (Textual's `border-left: thick`), a
collapsible title (▶ / ▼), blank margin lines. The colours come from the stylesheet as component
classes (`Look.style`), so the theme still decides them.

Every text here is outside text already passed through `visible`; it becomes a Rich `Text`
(never parsed as markup), so `[bold]` in a file name is drawn as written."""
from __future__ import annotations

from dataclasses import dataclass, field

from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.strip import Strip

BAR = "█"                        # Textual's thick left border
COLLAPSED, EXPANDED = "▶", "▼"   # Textual's Collapsible symbols
PLAIN = Style()


@dataclass(slots=True)
class Look:
    """What drawing needs from the app: its console, the resolved component styles, the theme."""
    console: Console
    styles: dict[str, Style] = field(default_factory=dict)
    dark: bool = True
    variables: dict[str, str] = field(default_factory=dict)   # the theme's colours (for Markdown)
    base: Style = PLAIN      # the conversation's own style (its background), under every line

    def style(self, name: str) -> Style:
        return self.styles.get(name, PLAIN)


def blank(look: Look, width: int, count: int = 1) -> list[Strip]:
    return [Strip.blank(width, look.base) for _ in range(count)]


def paragraph(look: Look, text: Text, width: int, *, style: Style = PLAIN, left: int = 1, right: int = 1,
              bar: Style | None = None, indent: int = 0, max_lines: int | None = None) -> list[Strip]:
    """`text` wrapped to fit, on `style`'s background, padded `left`/`right`, after `indent` blank
    columns (outside the background) and a bar in `bar`'s colour when given. `max_lines` keeps the
    first lines and says how many more there are."""
    inner = max(1, width - indent - left - right - (1 if bar is not None else 0))
    lines = list(text.wrap(look.console, inner, overflow="fold"))
    if max_lines is not None and len(lines) > max_lines:
        more = len(lines) - (max_lines - 1)
        lines = lines[:max_lines - 1] + [Text(f"… {more:,} more lines", style="italic")]
    return [_row(look, line, inner, style=style, left=left, right=right, bar=bar, indent=indent)
            for line in lines or [Text("")]]


def _row(look: Look, line: Text, inner: int, *, style: Style, left: int, right: int, bar: Style | None,
         indent: int) -> Strip:
    segments: list[Segment] = []
    if indent:
        segments.append(Segment(" " * indent))
    if bar is not None:
        segments.append(Segment(BAR, style + bar))
    if left:
        segments.append(Segment(" " * left, style))
    # Segments, not intermediate Strips: a Strip carries seven caches, and a long answer is
    # hundreds of rows
    body = Segment.apply_style(line.render(look.console), style)
    segments.extend(Segment.adjust_line_length(list(body), inner, style))
    if right:
        segments.append(Segment(" " * right, style))
    width = indent + (1 if bar is not None else 0) + left + inner + right
    return Strip(Segment.apply_style(segments, look.base), width)


def title(look: Look, parts: Text, width: int, *, expanded: bool, style: Style = PLAIN, left: int = 2) -> list[Strip]:
    """A collapsible block's title line(s): the open/closed symbol, then `parts`."""
    head = Text.assemble(f"{EXPANDED if expanded else COLLAPSED} ", parts)
    return paragraph(look, head, width, style=style, left=left, right=1)


def folded(look: Look, heading: Text, body: Text, width: int, *, expanded: bool, style: Style = PLAIN,
           max_lines: int | None = None) -> list[Strip]:
    """A collapsible block: its title and, opened, its body indented under it."""
    lines = title(look, heading, width, expanded=expanded, style=style)
    if expanded:
        lines += paragraph(look, body, width, style=style, left=4, max_lines=max_lines)
    return lines
