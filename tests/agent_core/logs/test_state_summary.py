"""The transcript viewer's line for a state record names the parts saved, never the writer's own
bookkeeping (the checkpoint index, the whole-copy mark)."""
from __future__ import annotations

from agent_core.logs.record_text import state_summary


def test_a_whole_state_line_names_its_parts_not_its_index():
    line = {"t": "state", "at": 1.0, "all": True, "index": {"line": 9, "entries": []}, "cost": {}, "turns": 3,
            "pipeline": {}}
    assert state_summary(line) == "state saved: cost, turns, pipeline (after turn 3)"
