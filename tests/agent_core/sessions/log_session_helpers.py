"""A long demo session and the check that its log resumes as it was left, shared by the tests of
the log's growth (test_session_log_growth.py) and of the checkpoint index (test_checkpoint_index.py)."""
from __future__ import annotations

import json
from pathlib import Path

from agent_core.sessions.session_reader import SessionReplay, load_session
from tests.agent_helpers import collect, demo_agent
from tests.demo_project import build

PROMPTS = ["explore this repository", "how does compaction work?", "what does the agent loop do?",
           "explain the tools and the sandbox", "how are costs computed?", "describe the TUI widgets",
           "how are sessions saved and resumed?", "what do the tests cover?"]


def sizes(path: Path) -> tuple[int, int]:
    """(bytes of the log, bytes of its entry and history records: the entries it holds)."""
    total = entries = 0
    with open(path, "rb") as f:
        for line in f:
            total += len(line)
            if line.startswith((b'{"t":"entry"', b'{"t":"history"')):
                entries += len(line)
    return total, entries


def plain(v):
    return json.loads(json.dumps(v, default=str))


async def demo_session(tmp_path: Path, turns: int):
    agent = demo_agent(build(tmp_path), home=str(tmp_path / "home"), allow=["all"])
    for i in range(turns):
        events = await collect(agent.run(f"{PROMPTS[i % len(PROMPTS)]} (#{i})"))
        assert events[-1].stop_reason == "end_turn"
    await agent.aclose()
    return agent


def assert_resumes_as_left(agent) -> None:
    s = load_session(agent.session.path)
    assert s.warnings == []
    eager = SessionReplay(archive=True)      # every line decoded as it comes: the same session
    eager.read(agent.session.path)
    e = eager.result(agent.session.path)
    assert [x.to_dict() for x in e.entries] == [x.to_dict() for x in s.entries] and e.state == s.state
    # the model calls the state counts are passed over too; those after the last state line are read
    assert [x for x in e.events if x.get("type") not in ("tool_call", "tool_result", "assistant_done",
                                                         "turn_finished", "model_call")] == [
        x for x in s.events if x.get("type") != "model_call"]
    assert e.calls_after_state == s.calls_after_state
    assert [e.to_dict() for e in s.entries] == [e.to_dict() for e in agent.entries]
    assert s.state["pipeline"] == plain(agent.pipeline.snapshot())
    assert s.state["cost"] == plain(agent.cost.to_dict())
    assert s.state["permissions"] == agent.permissions.to_dict() and s.state["turns"] == agent.turns
    assert s.state["context_history"] == plain([list(p) for p in agent.context_history[-240:]])
