"""/context's largest items: each block of the projected view named by what it is, largest first."""
from __future__ import annotations

from agent_core.context_items import ContextItem, context_items, largest_items
from compaction.entry import Entry, assistant, tool_result_block, user
from compaction.estimate import estimate_block


def history() -> list[Entry]:
    read = {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "src/big.py"}}
    grep = {"type": "tool_use", "id": "t2", "name": "grep", "input": {"pattern": "TODO"}}
    results = [tool_result_block("t1", "def f():\n    pass\n" * 400), tool_result_block("t2", "a.py:1: TODO\n" * 30)]
    return [user("please look at big.py"), assistant([read, grep], response_id="r1"), user(results),
            assistant("It defines f many times. " * 10, response_id="r2"),
            user("<file path=\"src/app.py\">...</file>", kind="attachment", path="src/app.py"),
            Entry({"role": "user", "content": [{"type": "text", "text": "boundary"}]}, kind="compact_boundary")]


def test_items_are_named_by_what_they_are():
    h = history()
    items = context_items(h)
    blocks = [b for e in h[:4] for b in e.content]
    assert [i.kind for i in items] == ["user", "tool call", "tool call", "file read", "tool result", "assistant",
                                       "re-attached file"]
    assert [i.tokens for i in items[:6]] == [estimate_block(b) for b in blocks]
    assert items[3].label == "src/big.py" and items[4].label == "grep TODO" and items[6].label == "src/app.py"
    assert all(i.label != "boundary" for i in items)          # a boundary is never sent


def test_largest_first_and_capped():
    items = context_items(history())
    top = largest_items(history(), n=3)
    assert len(top) == 3 and top[0].kind == "file read"
    assert [i.tokens for i in top] == sorted((i.tokens for i in items), reverse=True)[:3]
    assert isinstance(top[0], ContextItem)
