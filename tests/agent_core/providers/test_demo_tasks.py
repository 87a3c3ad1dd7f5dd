"""The offline demo model doing what a prompt clearly asks: write or edit a file, read a folder in
rounds until the context is nearly full, call the compact tool; and the nine-section summaries and
the memory notes a compaction asks it for.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from agent_core.providers.demo.model import DemoModel, request_tokens
from agent_core.providers.demo.planner import FOLDER_FULL, FOLDER_ROUND, MIN_PARTIAL_LINES, detect_intent
from compaction.accounting.tokens import estimate_block, estimate_message, estimate_text
from tests.agent_core.providers.demo_model_helpers import (SUMMARY_ASK, SYSTEM, TOOLS, Runner, call, calls_of,
                                                           demo_workspace, turn)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return demo_workspace(tmp_path)


async def test_writes_and_edits_only_when_asked(ws):
    m, msgs = DemoModel(ws), []
    run = Runner(ws, allow_writes=True)
    responses = await turn(m, msgs, "create a file notes.md with what you learn about tokens", run)
    writes = [b for b in calls_of(responses) if b["name"] == "write_file"]
    assert len(writes) == 1 and writes[0]["input"]["path"] == "notes.md"
    assert (ws / "notes.md").read_text().startswith("# Notes")
    assert "Wrote `notes.md`" in responses[-1].content[0]["text"]

    responses = await turn(m, msgs, "replace 'self.items = []' with 'self.items = list()' in src/util.py", run)
    names = [(b["name"], b["input"]) for b in calls_of(responses)]
    assert names == [("read_file", {"path": "src/util.py"}),
                     ("edit_file", {"path": "src/util.py", "old_string": "self.items = []",
                                    "new_string": "self.items = list()"})]
    assert "self.items = list()" in (ws / "src/util.py").read_text()

    responses = await turn(m, msgs, "write a short explanation of src/cache.py", run)
    assert not any(b["name"] in ("write_file", "edit_file") for b in calls_of(responses))


@pytest.mark.parametrize("prompt,intent,arg", [
    ("compact the context, focusing on tokens", "compact", {"focus": "tokens"}),
    ("/compact", "compact", {"focus": ""}),
    ("can you compact the history now", "compact", {"focus": ""}),
    ("compact mode in the TUI - how does it work?", "explore", {}),
    ("explain compaction", "explore", {}),
    ("create a file notes.md with what you found", "write", {"path": "notes.md"}),
    ("write a summary of src/cache.py", "explore", {}),
    ("write a summary of src/cache.py to notes/cache.md", "write", {"path": "notes/cache.md"}),
    ("save it to ../outside.md", "explore", {}),
    ("replace 'a = 1' with 'a = 2' in src/util.py", "edit", {"old": "a = 1", "new": "a = 2", "path": "src/util.py"}),
])
def test_writes_edits_and_compacts_only_when_clearly_asked(prompt, intent, arg):
    from agent_core.providers.demo.planner import detect_intent
    assert detect_intent(prompt) == (intent, arg)


@pytest.mark.parametrize("prompt,folder", [("read every file in src/", "src"),
                                           ("Read all the modules under docs.", "docs"),
                                           ("go through each file in `tests`", "tests")])
def test_reading_a_folder_is_its_own_intent(prompt, folder):
    assert detect_intent(prompt) == ("folder", {"dir": folder})


@pytest.mark.parametrize("prompt", ["read every file in ../etc", "read all files in /etc", "explore the project"])
def test_a_folder_outside_the_workspace_is_not_read_as_one(prompt):
    assert detect_intent(prompt)[0] != "folder"


async def test_a_folder_is_read_in_rounds_until_the_context_is_nearly_full(ws):
    """Rounds of parallel reads, each within a fifth of the window, until the next file would take
    the request past FOLDER_FULL of the window: the last file is read only as far as fits."""
    for i in range(16):      # sixteen modules of 300 lines, about 2,500 tokens for the 200 lines read
        (ws / "src" / f"big{i:02}.py").write_text("".join(
            f"def step_{i}_{j}(value, limit):\n    return value + {j} if value < limit * {j} else limit - value\n"
            for j in range(150)))
    m = DemoModel(ws, context_window=30_000)
    msgs: list[dict] = []
    responses = await turn(m, msgs, "read every file in src/", Runner(ws))
    rounds = [[b for b in r.content if b["type"] == "tool_use"] for r in responses[:-1]]
    assert len(rounds) >= 2 and all(all(b["name"] == "read_file" for b in r) for r in rounds)
    paths = [b["input"]["path"] for r in rounds for b in r]
    assert all(p.startswith("src/") for p in paths) and len(set(paths)) == len(paths)
    for k in range(len(rounds)):             # each round's results stay within a fifth of the window
        results = msgs[2 + 2 * k]["content"]
        assert sum(estimate_block(b) for b in results) <= FOLDER_ROUND * 30_000 + 60 * len(results)
    last = rounds[-1][-1]["input"]
    assert MIN_PARTIAL_LINES <= last.get("limit", 200) < 200     # the head of the last file only
    full = request_tokens(SYSTEM, msgs[:-1], TOOLS)              # what the answer's request held
    assert 0.8 * 30_000 < full <= (FOLDER_FULL + 0.02) * 30_000, full
    assert responses[-1].stop_reason == "end_turn"
    assert f"read {len(paths)} files" in responses[-1].content[0]["text"]


async def test_a_missing_folder_is_explored_for_instead(ws):
    m = DemoModel(ws)
    responses = await turn(m, [], "read every file in nowhere/", Runner(ws))
    assert responses[-1].stop_reason == "end_turn" and calls_of(responses)


async def test_compact_request_calls_the_compact_tool_once(ws):
    m, msgs = DemoModel(ws), []
    responses = await turn(m, msgs, "compact the context, focusing on tokens", Runner(ws))
    assert [(b["name"], b["input"]) for b in calls_of(responses)] == [("compact", {"focus": "tokens"})]
    assert responses[-1].stop_reason == "end_turn"


async def test_recognises_a_compaction_made_during_the_current_turn(ws):
    m = DemoModel(ws)
    attachment = ('Re-attached after compaction: src/app.py (read_file).\n<file path="src/app.py">\n'
                  + (ws / "src/app.py").read_text() + "\n</file>")

    def summary(*prompts: str) -> str:
        users = "\n".join(f'   - "{p}"' for p in prompts)
        return ("This session continues an earlier conversation that was compacted.\n\n1. Primary Request and Intent:\n"
                f"   Latest: {prompts[-1]}\n\n6. All User Messages:\n{users}\n\n7. Pending Tasks:\n   - none\n")

    mid = [{"role": "user", "content": [{"type": "text", "text": summary("explain the cache", "compact the context")},
                                        {"type": "text", "text": "compact the context"},
                                        {"type": "text", "text": attachment}]}]
    _, r = await call(m, mid)          # compacted by this very request: done, no second compact call
    assert r.stop_reason == "end_turn" and "Context compacted" in r.content[0]["text"]

    new = [{"role": "user", "content": [{"type": "text", "text": summary("explain the cache")},
                                        {"type": "text", "text": attachment},
                                        {"type": "text", "text": "compact the context"}]}]
    _, r = await call(m, new)          # a fresh request after an earlier compaction: compact again
    assert [b["name"] for b in r.content if b["type"] == "tool_use"] == ["compact"]

    msgs = [{"role": "user", "content": [{"type": "text", "text": summary("explain the parser")},
                                         {"type": "text", "text": "explain the parser"},
                                         {"type": "text", "text": attachment}]}]
    first_round = []
    for _ in range(6):                  # mid-turn compaction of an exploration: one short round, then answer
        _, r = await call(m, msgs)
        msgs.append({"role": "assistant", "content": r.content})
        if r.stop_reason != "tool_use":
            break
        first_round.append([b["name"] for b in r.content if b["type"] == "tool_use"])
        msgs.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": b["id"], "content": Runner(ws)(b["name"], b["input"])[0]}
            for b in r.content if b["type"] == "tool_use"]})
    assert len(first_round) == 1 and "read_file" in first_round[0] and r.stop_reason == "end_turn"
    assert "src/parser.py" in {b["input"]["path"] for x in msgs if x["role"] == "assistant" for b in x["content"]
                               if b["type"] == "tool_use" and b["name"] == "read_file"}


async def _session_with_errors(ws) -> list[dict]:
    m, msgs = DemoModel(ws), []
    await turn(m, msgs, "How are tokens counted?", Runner(ws, fail={"grep"}))
    await turn(m, msgs, "Now explain the storage layer", Runner(ws))
    msgs.append({"role": "user", "content": "And the session module?"})   # pending, unanswered
    return msgs


async def test_compaction_summary_has_nine_sections_and_is_much_shorter(ws):
    msgs = await _session_with_errors(ws)
    m = DemoModel(ws)
    request = msgs + [{"role": "user", "content": SUMMARY_ASK}]
    deltas, r = await call(m, request, tools=[], purpose="compaction")
    text = r.content[0]["text"]
    assert r.stop_reason == "end_turn" and [b["type"] for b in r.content] == ["text"] and "".join(deltas) == text
    a = text.index("<analysis>")
    assert a < text.index("</analysis>") < text.index("<summary>") < text.index("</summary>")
    summary = text[text.index("<summary>"):]
    heads = ["Primary Request and Intent", "Key Technical Concepts", "Files and Code Sections", "Errors and Fixes",
             "Problem Solving", "All User Messages", "Pending Tasks", "Current Work", "Optional Next Step"]
    pos = [summary.index(f"{i}. {h}:") for i, h in enumerate(heads, 1)]
    assert pos == sorted(pos)
    users = summary[pos[5]:pos[6]]
    for p in ("How are tokens counted?", "Now explain the storage layer", "And the session module?"):
        assert f'"{p}"' in users
    assert SUMMARY_ASK not in summary
    read = {b["input"]["path"] for x in msgs if x["role"] == "assistant" for b in x["content"]
            if b["type"] == "tool_use" and b["name"] == "read_file"}
    assert all(f"`{p}`" in summary for p in read)
    assert "grep failed on purpose" in summary[pos[3]:pos[4]]
    assert "And the session module?" in summary[pos[6]:pos[7]]           # pending
    source = sum(estimate_message(x) for x in msgs)
    assert estimate_text(text) * 3 < source, (estimate_text(text), source)


async def test_second_compaction_keeps_earlier_user_messages(ws):
    msgs = await _session_with_errors(ws)
    m = DemoModel(ws)
    _, r = await call(m, msgs + [{"role": "user", "content": SUMMARY_ASK}], tools=[], purpose="compaction")
    old = r.content[0]["text"]
    old = old[old.index("<summary>"):]
    after = [{"role": "user", "content": [{"type": "text", "text": "This session is being continued.\n" + old}]}]
    responses = await turn(m, after, "What about the render module?", Runner(ws))   # keeps working after a summary
    assert len(responses) >= 2 and responses[-1].stop_reason == "end_turn"
    _, r2 = await call(m, after + [{"role": "user", "content": SUMMARY_ASK}], tools=[], purpose="compaction")
    s2 = r2.content[0]["text"]
    users = s2[s2.index("6. All User Messages:"):s2.index("7. Pending Tasks:")]
    for p in ("How are tokens counted?", "And the session module?", "What about the render module?"):
        assert p in users


async def test_memory_notes_are_short(ws):
    msgs = await _session_with_errors(ws)
    _, r = await call(DemoModel(ws), msgs, tools=[], max_tokens=600, purpose="memory")
    text = r.content[0]["text"]
    assert text.startswith("# Session notes") and "How are tokens counted?" in text and "## Files" in text
    assert r.usage["output_tokens"] <= 600 and estimate_text(text) * 5 < sum(estimate_message(x) for x in msgs)
