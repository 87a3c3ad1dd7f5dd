"""Permission requests carry their own answer: the loop sends the request with its events and
awaits the answer the front-end puts on it; a cancelled turn cancels the request."""
from __future__ import annotations

import asyncio

from agent_core import events as ev
from compaction import project, validate_history
from tests.agent_helpers import fake_agent, make_workspace, of
from tests.fake_anthropic import FakeAnthropic, reply, tool_use


async def test_the_answer_goes_on_the_request_and_only_the_first_counts():
    req = ev.PermissionRequest(id="toolu_1", name="bash", input={"command": "ls"})
    req.answer("allow")
    req.answer("deny")
    assert await req.reply == "allow"
    assert req.to_dict() == {"type": "permission_request", "id": "toolu_1", "name": "bash",
                             "input": {"command": "ls"}, "decision": None}


async def test_a_request_carries_the_tool_calls_id(tmp_path):
    ws = make_workspace(tmp_path)
    script = [reply(tool_use("write_file", {"path": "a.txt", "content": "x"})), reply("done")]
    with FakeAnthropic(script) as fake:
        agent = fake_agent(ws, fake.base_url, interactive=True)
        events = []
        async for e in agent.run("write a"):
            events.append(e)
            if isinstance(e, ev.PermissionRequest):
                e.answer("always")
        await agent.aclose()
    (req,), (call,) = of(events, ev.PermissionRequest), of(events, ev.ToolCall)
    assert req.id == call.id and req.decision == "always"
    assert (ws / "a.txt").read_text() == "x"


async def test_cancelling_while_asked_cancels_the_request_and_keeps_a_valid_history(tmp_path):
    ws = make_workspace(tmp_path)
    script = [reply(tool_use("bash", {"command": "echo hi"})), reply("after the cancel")]
    with FakeAnthropic(script) as fake:
        agent = fake_agent(ws, fake.base_url, interactive=True)
        events, asked = [], []
        async for e in agent.run("run it"):
            events.append(e)
            if isinstance(e, ev.PermissionRequest):
                asked.append(e)
                agent.cancel()          # the user pressed Esc instead of answering
        assert events[-1].stop_reason == "cancelled"
        await asyncio.sleep(0)
        assert asked[0].reply.cancelled()
        asked[0].answer("allow")        # a late answer changes nothing
        result = agent.entries[-1].content[0]
        assert result["type"] == "tool_result" and result["is_error"] and "Cancelled" in result["content"]
        assert validate_history(project(agent.entries)) == []
        await agent.aclose()
