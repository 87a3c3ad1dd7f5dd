"""/context's thresholds table says how far the count is from each level (its "state now" column
was empty below a level)."""
from __future__ import annotations

from app.tui.screens.context_screen import threshold_state


def test_each_level_says_how_far_the_count_is():
    assert threshold_state(150_000, 167_000) == "17,000 to go"
    assert threshold_state(167_000, 167_000) == "reached"
    assert threshold_state(170_100, 167_000) == "reached, 3,100 over"
    assert threshold_state(10, 0) == "—" and threshold_state(10, None) == "—"
