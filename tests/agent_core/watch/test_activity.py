"""watch's activity feed: prompts and tool calls read from appended bytes, each once."""
from __future__ import annotations

import json
from pathlib import Path

from agent_core.watch.activity import ActivityReader, prompt_text, tool_summary
from tests.log_helpers import assistant, usage, user, write_log

SESSION = "5f1e2d3c-0000-4000-8000-000000000001"


def tool_use(mid: str, name: str, tool_input: dict, **kw) -> dict:
    rec = assistant(mid, f"req-{mid}", u=usage(), session=SESSION, block="tool_use", **kw)
    rec["message"]["content"] = [{"type": "tool_use", "id": f"tu-{mid}", "name": name, "input": tool_input}]
    return rec


def append(path: Path, *records) -> None:
    with open(path, "a", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")


def test_claude_code_prompts_and_tool_calls_once_in_log_order(tmp_path):
    path = write_log(tmp_path / "s.jsonl", [
        user("fix   the\nparser", session=SESSION, uuid="u1"),
        tool_use("m1", "Bash", {"command": "pytest -q", "description": "run tests"}),
        user([{"type": "tool_result", "tool_use_id": "tu-m1", "content": "ok"}], session=SESSION, uuid="u2"),
        user("<local-command-stdout>x</local-command-stdout>", session=SESSION, uuid="u3"),
        user("caveat", session=SESSION, uuid="u4", isMeta=True),
        user("summary of before", session=SESSION, uuid="u5", isCompactSummary=True),
        tool_use("side", "Read", {"file_path": "x"}, sidechain=True)])
    reader = ActivityReader(path)
    items = reader.read()
    assert [(i.kind, i.tool, i.text) for i in items] == [("prompt", None, "fix the parser"),
                                                          ("tool", "Bash", "pytest -q")]
    assert reader.read() == []                             # nothing appended: nothing new
    append(path, tool_use("m1", "Bash", {"command": "pytest -q"}),     # the same call again: once
           user("<command-name>/compact</command-name>", session=SESSION, uuid="u6"),
           tool_use("m2", "Read", {"file_path": "/src/parser.py"}))
    assert [(i.kind, i.tool, i.text) for i in reader.read()] == [("prompt", None, "/compact"),
                                                                  ("tool", "Read", "/src/parser.py")]


def test_text_helpers():
    assert prompt_text([{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}]) == "a b"
    assert prompt_text("   ") is None and prompt_text(42) is None
    assert len(prompt_text("x" * 500)) == 200 and prompt_text("x" * 500).endswith("…")
    assert tool_summary({"pattern": "TODO", "path": "src"}) == "src"
    assert tool_summary({"other": 1}) == "" and tool_summary("nope") == ""
