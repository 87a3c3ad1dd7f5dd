"""Compact token counts and fitting a table to the terminal (agent_core/usage/tables.py)."""
from __future__ import annotations

import pytest

from agent_core.usage.tables import Column, Row, render, tokens


@pytest.mark.parametrize("n, text", [
    (9_999, "9,999"), (10_000, "10.0K"), (123_463, "123K"), (999_499, "999K"), (999_999, "1.00M"),
    (1_234_567, "1.23M"), (45_678_901, "45.7M"), (1_975_308_642, "1.98B"), (-12_345, "-12.3K"),
])
def test_compact_counts_keep_three_significant_digits(n, text):
    assert tokens(n, True) == text
    assert tokens(n, False) == f"{n:,}"


def test_a_compact_table_leaves_out_columns_by_priority_never_cutting_a_cell():
    cols = [Column("Label", "<"), Column("Wide", drop=1), Column("Mid", drop=2), Column("Keep")]
    rows = [Row(["a-label", "x" * 30, "123,456", "$1,234.56"]), Row(["Total", "", "", "$1,234.56"], "total")]
    lines, dropped = render(cols, rows, width=40, compact=True)
    assert dropped == ["Wide"]
    assert all(len(ln) <= 40 for ln in lines)
    assert "123,456" in lines[2] and "$1,234.56" in lines[2]
    lines, dropped = render(cols, rows, width=20, compact=True)
    assert dropped == ["Wide", "Mid"] and "$1,234.56" in lines[-1]
    lines, dropped = render(cols, rows, width=20, compact=False)    # the full layout is never narrowed
    assert dropped == [] and "x" * 30 in lines[2]
    assert lines[-2].startswith("-")                                 # a rule before the totals row
