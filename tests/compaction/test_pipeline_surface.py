"""The engine's narrow surface: a caller keeps its own parts of the saved state through `remember`,
and the agent loop drives the pipeline through its methods, never writing its config or state."""
import re
from pathlib import Path

from compaction import ContextBudget, Pipeline, PipelineState

LOOP = Path(__file__).resolve().parents[2] / "agent_core" / "loop"


def test_a_callers_part_of_the_state_survives_a_resume_and_can_be_forgotten():
    p = Pipeline()
    assert p.recalled("counted") is None
    p.remember("counted", {"overhead_adjust": 5})
    p.remember("counted", {"view_end": "u1"})
    again = Pipeline(state=PipelineState.from_dict(p.snapshot()))
    assert again.recalled("counted") == {"overhead_adjust": 5, "view_end": "u1"}
    again.forget("counted")
    assert again.recalled("counted") is None and "counted" not in again.snapshot()["layers"]


def test_budget_and_overhead_are_set_through_methods():
    p = Pipeline()
    small = ContextBudget(context_window=50_000)
    p.set_budget(small)
    p.set_overhead(1_234)
    assert p.budget is small and p.overhead_tokens == 1_234 and p.count([]) == 1_234


def test_the_loop_writes_no_field_of_the_pipeline():
    write = re.compile(r"pipeline\.(config|state)\b[\w.\[\]\"']*\s*(\+|-)?=(?!=)"
                       r"|pipeline\.(stages|before_summary)\s*=(?!=)|pipeline\.state\.(of|layers)\b")
    found = [f"{f.name}:{i}: {line.strip()}" for f in sorted(LOOP.glob("*.py"))
             for i, line in enumerate(f.read_text().splitlines(), 1) if write.search(line)]
    assert found == []
