"""Plain-text tables for `ctxtui usage` that fit the terminal without cutting a digit.

The full layout shows exact numbers. Under 100 columns the compact layout abbreviates token counts
(1.2M) and merges narrow columns. If a row is still wider than the terminal, the least useful
columns are left out, in the order each column's `drop` gives, and the report says which; a cell
is never cut. Every cell is someone's text (a model name, a session id, a project folder from a
log), so each passes through the one sanitizer (`one_line`) before it is measured: an escape
sequence in a log is shown, never obeyed, and the columns stay aligned.
"""
from __future__ import annotations

import os
import sys
from collections import namedtuple

from agent_core.security.visible_text import one_line

COMPACT_BELOW = 100      # terminal columns under which the compact layout is used
_UNITS = ((10 ** 12, "T"), (10 ** 9, "B"), (10 ** 6, "M"), (10 ** 3, "K"))
ABBREVIATION_NOTE = "tokens abbreviated: K thousand, M million, B billion (exact in --json)"


class Column(namedtuple("Column", "title align drop", defaults=(">", 0))):
    """A column: its title, its alignment (">" right: numbers, "<" left: labels) and, in the
    compact layout, when it is left out (1 first, 2 next...; 0 always kept). Named tuples here and
    in the report, not dataclasses: importing dataclasses was a sixth of a repeated report's run."""
    __slots__ = ()


class Row(namedtuple("Row", "cells kind", defaults=("body",))):
    """A row's cells and its kind: body | child (a breakdown row) | total | gap."""
    __slots__ = ()


def terminal_columns(fallback: int) -> int:
    """What shutil.get_terminal_size gives (its $COLUMNS, else the terminal's width, else
    `fallback`), without importing shutil: it loads bz2 and lzma, 2 ms of every run."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    stdout = sys.__stdout__       # None when Python was started without one
    if columns <= 0 and stdout is not None:
        try:
            columns = os.get_terminal_size(stdout.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else fallback


def terminal_width() -> int | None:
    """The terminal's columns ($COLUMNS first); None when the output is not a terminal (a pipe or
    file gets the full layout, whatever its width)."""
    return terminal_columns(0) or None


def is_compact(width: int | None) -> bool:
    return width is not None and width < COMPACT_BELOW


def tokens(n: int, compact: bool) -> str:
    """A token count: exact with thousands separators, or (compact, from 10,000 on) three
    significant digits and a unit, at most 5 characters: 12.3K, 456K, 1.98B."""
    if not compact or abs(n) < 10_000:
        return f"{n:,}"
    units = _UNITS[::-1]                       # K, M, B, T
    for i, (size, unit) in enumerate(units):
        v = n / size
        if abs(v) >= 1000 and i + 1 < len(units):
            continue
        text = f"{v:.2f}" if abs(v) < 10 else f"{v:.1f}" if abs(v) < 100 else f"{v:.0f}"
        if abs(float(text)) >= 1000 and i + 1 < len(units):      # 999,999 rounds to 1000K: say 1.00M
            v = n / units[i + 1][0]
            return f"{v:.2f}{units[i + 1][1]}"
        return text + unit
    return f"{n:,}"


def _widths(columns: list[Column], rows: list[Row]) -> list[int]:
    return [max([len(c.title)] + [len(r.cells[i]) for r in rows]) for i, c in enumerate(columns)]


def _line_width(widths: list[int], gap: int) -> int:
    return sum(widths) + gap * (len(widths) - 1)


def fit(columns: list[Column], rows: list[Row], width: int, gap: int = 2) -> tuple[list[int], list[str]]:
    """Indexes of the columns to show in `width`, and the titles of those left out."""
    keep = list(range(len(columns)))
    widths = _widths(columns, rows)
    dropped: list[str] = []
    for i in sorted((i for i, c in enumerate(columns) if c.drop), key=lambda i: columns[i].drop):
        if _line_width([widths[k] for k in keep], gap) <= width:
            break
        keep.remove(i)
        dropped.append(columns[i].title)
    return keep, dropped


def render(columns: list[Column], rows: list[Row], width: int | None = None,
           compact: bool = False) -> tuple[list[str], list[str]]:
    """The table's lines (header, rule, rows; a rule before the totals row) and the titles of the
    columns left out to fit `width` (compact layout only: the full one is never narrowed, the caller
    switches to compact when it does not fit). The compact layout has one space between columns."""
    gap = 1 if compact else 2
    rows = [Row([one_line(c) for c in r.cells], r.kind) for r in rows]
    keep, dropped = fit(columns, rows, width, gap) if compact and width else (list(range(len(columns))), [])
    cols = [columns[i] for i in keep]
    body = [Row([r.cells[i] for i in keep], r.kind) for r in rows]
    widths = _widths(cols, body)

    def fmt(cells: list[str]) -> str:
        return (" " * gap).join(c.ljust(w) if col.align == "<" else c.rjust(w)
                                for c, w, col in zip(cells, widths, cols)).rstrip()

    rule = (" " * gap).join("-" * w for w in widths)
    lines = [fmt([c.title for c in cols]), rule]
    for r in body:
        if r.kind == "total":
            lines.append(rule)
        lines.append(fmt(r.cells))
    return lines, dropped
