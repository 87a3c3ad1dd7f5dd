"""A coding session of tool rounds for context collapse (layer 4) and the views over it: one call and
its result a round, with a usage figure on the newest response."""
from __future__ import annotations

from compaction import ContextBudget, Entry, tool_result_block

T0 = 1_700_000_000.0
BUDGET = ContextBudget(60_000, 8_000)  # E 54,000: commit at 48,600, target (0.75) 40,500


def round_(r: int, size: int = 3_000, usage: int | None = None) -> list[Entry]:
    kinds = ["read_file", "bash", "edit_file", "grep"]
    name = kinds[r % 4]
    inp = {"read_file": {"path": f"src/m{r}.py"}, "bash": {"command": f"pytest tests/t{r}.py -q"},
           "edit_file": {"path": f"src/m{r}.py", "old_string": "a", "new_string": "b"},
           "grep": {"pattern": f"def f{r}"}}[name]
    body = "x" * size + (f"\nexit code {r % 3}" if name == "bash" else "")
    return [Entry({"role": "assistant", "content": [{"type": "text", "text": f"Looking at part {r}."},
                                                    {"type": "tool_use", "id": f"t{r}", "name": name, "input": inp}]},
                  response_id=f"m{r}", timestamp=T0 + 10 * r,
                  usage={"input_tokens": usage, "output_tokens": 5} if usage else None),
            Entry({"role": "user", "content": [tool_result_block(f"t{r}", body)]}, timestamp=T0 + 10 * r + 1)]


def session(rounds: int, usage: int = 50_000) -> list[Entry]:
    es = [Entry({"role": "user", "content": [{"type": "text", "text": "make the tests pass"}]}, timestamp=T0)]
    for r in range(rounds):
        es += round_(r, usage=usage if r == rounds - 1 else None)
    return es
