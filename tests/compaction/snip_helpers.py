"""A coding session for snip (layer 2): every round one bash call and its result, usage on every response."""
from __future__ import annotations

from compaction import ContextBudget, Entry, tool_result_block

T0 = 1_700_000_000.0
BUDGET = ContextBudget(60_000, 8_000)  # E 54,000, warning 44,100, target (0.5) 27,000


def session(rounds: int, size: int = 3_000, first: str = "please fix the failing test") -> list[Entry]:
    """A coding session: every round one call and its result, usage on every response."""
    es = [Entry({"role": "user", "content": [{"type": "text", "text": first}]}, timestamp=T0)]
    running = 500
    for r in range(rounds):
        tid = f"toolu_{r:05d}"
        running += size // 4 + 40
        es.append(Entry({"role": "assistant", "content": [
            {"type": "text", "text": f"step {r}"},
            {"type": "tool_use", "id": tid, "name": "bash", "input": {"command": f"pytest -k t{r}"}}]},
            response_id=f"msg_{r}", usage={"input_tokens": running, "output_tokens": 20}, timestamp=T0 + 10 * r))
        es.append(Entry({"role": "user", "content": [tool_result_block(tid, "x" * size)]}, timestamp=T0 + 10 * r + 1))
    return es
