"""The TUI's view of the agent (app.tui.agent_port.AgentHandle) is what the Agent provides: the
real Agent, as `ctxtui` builds it, and the TUI tests' scripted agent both have every member."""
from __future__ import annotations

import inspect

from agent_core.config import load_config
from agent_core.loop.agent import Agent
from agent_core.loop.factory import build_agent
from app.tui.agent_port import AgentHandle

from tests.agent_helpers import make_workspace, user_dirs
from tests.tui_fakes import FakeAgent


def members() -> set[str]:
    return {n for n in dir(AgentHandle) if not n.startswith("_")} | set(AgentHandle.__annotations__)


async def test_the_real_agent_is_an_agent_handle(tmp_path):
    agent = build_agent(load_config({"model": "demo"}, environ=user_dirs(), workspace=make_workspace(tmp_path)),
                        interactive=True)
    try:
        assert isinstance(agent, AgentHandle)
    finally:
        await agent.aclose()
    # what the app iterates or awaits is so on the Agent
    assert inspect.isasyncgenfunction(Agent.run) and inspect.isasyncgenfunction(Agent.compact)
    assert inspect.iscoroutinefunction(Agent.aclose)


def test_the_scripted_agent_of_the_tui_tests_is_one_too():
    assert isinstance(FakeAgent(), AgentHandle)


def test_the_handle_lists_only_what_the_tui_uses():
    """No member the TUI does not use: each is named in one of app/tui's modules beside the port
    (the app and its parts: slash_commands.py, figures.py, ...)."""
    from pathlib import Path
    tui = Path(__file__).resolve().parents[2] / "app" / "tui"
    source = "\n".join(p.read_text() for p in sorted(tui.rglob("*.py")) if p.name != "agent_port.py")
    unused = [n for n in members() if f".{n}" not in source]
    assert not unused, unused
