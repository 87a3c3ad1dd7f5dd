"""Answers whose usage is exactly what a server counting like the estimator would report."""
from __future__ import annotations

from compaction import Entry, tool_result_block
from tests.compaction.collapse_helpers import T0


def answered(view: list[Entry], n: int) -> list[Entry]:
    """A response to the request `view` whose usage is exactly the estimate of it (a server that
    counts like the estimator), then its tool result."""
    answer = Entry({"role": "assistant", "content": [{"type": "text", "text": "next"},
                                                     {"type": "tool_use", "id": f"new{n}", "name": "bash",
                                                      "input": {"command": "ls"}}]},
                   response_id=f"new{n}", timestamp=T0 + 5_000 + n)
    answer = Entry(answer.message, response_id=answer.response_id, timestamp=answer.timestamp,
                   usage={"input_tokens": sum(e.tokens for e in view), "output_tokens": answer.tokens})
    return [answer, Entry({"role": "user", "content": [tool_result_block(f"new{n}", "y" * 800)]},
                          timestamp=T0 + 5_001 + n)]
