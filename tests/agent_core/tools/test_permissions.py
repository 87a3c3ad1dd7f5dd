"""Permission policy: defaults, allow once / always / deny, headless, overrides, session state."""
from __future__ import annotations

import asyncio
import json

import pytest

from agent_core.events import PermissionRequest
from agent_core.tools.permissions import DEFAULT_POLICY, PermissionPolicy, parse_tool_list
from agent_core.tool_spec import TOOL_NAMES
from agent_core.tools import ToolContext, ToolRegistry


class Asker:
    """A scripted front-end: answers in order and records what it was asked."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.asked: list[PermissionRequest] = []

    async def __call__(self, req: PermissionRequest) -> str:
        self.asked.append(req)
        await asyncio.sleep(0)
        return self.answers.pop(0)


def test_defaults_cover_every_tool():
    assert set(DEFAULT_POLICY) == set(TOOL_NAMES)
    p = PermissionPolicy()
    assert [t for t in TOOL_NAMES if p.mode(t) == "allow"] == ["read_file", "glob", "grep", "compact", "context_status"]
    assert {p.mode(t) for t in ("bash", "write_file", "edit_file")} == {"ask"}
    assert p.mode("some_new_tool") == "ask"


async def test_allowed_tools_are_not_asked():
    ask = Asker()
    d = await PermissionPolicy().check("read_file", {"path": "a"}, ask)
    assert d.allowed and d.source == "policy" and ask.asked == []


async def test_allow_once_asks_again_next_time():
    ask = Asker("allow", "allow")
    p = PermissionPolicy()
    d = await p.check("bash", {"command": "ls"}, ask, request_id="toolu_1")
    assert d.allowed and d.answer == "allow"
    req = ask.asked[0]
    assert (req.id, req.name, req.input, req.decision) == ("toolu_1", "bash", {"command": "ls"}, "allow")
    assert (await p.check("bash", {"command": "pwd"}, ask)).allowed
    assert len(ask.asked) == 2 and p.to_dict() == {"always": []}


async def test_always_is_remembered_and_survives_serialisation():
    ask = Asker("always")
    p = PermissionPolicy()
    assert (await p.check("edit_file", {}, ask)).allowed
    d = await p.check("edit_file", {}, ask)
    assert d.allowed and d.source == "always" and len(ask.asked) == 1
    state = json.loads(json.dumps(p.to_dict()))
    resumed = PermissionPolicy.from_dict(state)
    d = await resumed.check("edit_file", {}, None)         # even headless after resume
    assert d.allowed and d.source == "always"
    assert not (await resumed.check("bash", {}, None)).allowed


async def test_deny_gives_a_result_the_model_sees():
    ask = Asker("deny")
    d = await PermissionPolicy().check("write_file", {"path": "x"}, ask)
    assert not d.allowed and d.answer == "deny"
    out = d.output()
    assert out.is_error and out.content.startswith("The user denied") and "write_file" in out.content
    assert out.meta["permission"] == "denied"


async def test_unexpected_answer_or_broken_prompt_is_a_denial():
    assert not (await PermissionPolicy().check("bash", {}, Asker("maybe"))).allowed

    async def broken(req):
        raise RuntimeError("modal crashed")
    d = await PermissionPolicy().check("bash", {}, broken)
    assert not d.allowed and d.source == "error" and d.output().is_error


async def test_headless_denies_unless_allowed_up_front():
    d = await PermissionPolicy().check("bash", {"command": "ls"}, None)
    assert not d.allowed and d.source == "headless"
    assert "The user denied" in d.output().content and "--allow bash" in d.output().content
    assert (await PermissionPolicy().check("grep", {"pattern": "x"}, None)).allowed
    p = PermissionPolicy.headless(allow="bash,write_file")
    assert (await p.check("bash", {}, None)).allowed and (await p.check("write_file", {}, None)).allowed
    assert not (await p.check("edit_file", {}, None)).allowed
    assert all(PermissionPolicy.headless(allow=["all"]).mode(t) == "allow" for t in TOOL_NAMES)


async def test_deny_policy_is_never_asked_and_beats_always():
    ask = Asker("always")
    p = PermissionPolicy.from_dict({"always": ["bash"]}, overrides={"bash": "deny", "grep": "deny"})
    d = await p.check("bash", {}, ask)
    assert not d.allowed and d.source == "policy" and ask.asked == []
    assert not (await p.check("grep", {}, ask)).allowed


async def test_parallel_calls_ask_once_when_the_answer_is_always():
    ask = Asker("always", "deny")
    p = PermissionPolicy()
    results = await asyncio.gather(*(p.check("bash", {"command": str(i)}, ask) for i in range(3)))
    assert all(d.allowed for d in results) and len(ask.asked) == 1


def test_bad_names_and_modes_are_explained():
    with pytest.raises(ValueError, match="unknown tool 'bsh'.*bash"):
        parse_tool_list("read_file,bsh")
    with pytest.raises(ValueError, match="unknown tool"):
        PermissionPolicy.headless(allow="rm")
    with pytest.raises(ValueError, match="expected one of allow, ask, deny"):
        PermissionPolicy(overrides={"bash": "yes"})
    assert parse_tool_list(["bash", "grep, bash", ""]) == ["bash", "grep"]


async def test_denied_call_never_runs_the_tool(tmp_path):
    """The loop's pattern: check, then either execute or send the denial as the result."""
    ctx, reg = ToolContext(workspace=tmp_path), ToolRegistry()
    d = await PermissionPolicy().check("write_file", {"path": "f.txt", "content": "x"}, Asker("deny"))
    out = d.output() if not d.allowed else await reg.execute("write_file", {"path": "f.txt", "content": "x"}, ctx)
    assert out.is_error and not (tmp_path / "f.txt").exists()
