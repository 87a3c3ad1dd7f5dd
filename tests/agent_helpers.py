"""Building agents for tests: the real SDK against the fake server, or the demo model, in a tmp workspace."""
from __future__ import annotations

import os
import time
from pathlib import Path

from agent_core import events as ev
from agent_core.config import load_config
from agent_core.loop.factory import build_agent
from tests.fake_anthropic import echo_responder, is_summary_request, reply, tool_use

SECRET = "sk-ant-test-SECRET-0123456789abcdef"
MODEL = "claude-sonnet-4-6"


def make_workspace(root: Path) -> Path:
    ws = root / "ws"
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "README.md").write_text("# Sample\n\nA small project used by the tests.\n")
    (ws / "src").mkdir(exist_ok=True)
    (ws / "src" / "app.py").write_text("def main():\n    return 42\n" * 20)
    (ws / "src" / "util.py").write_text("import os\n\ndef helper(x):\n    return x * 2\n" * 30)
    return ws


def user_dirs() -> dict[str, str]:
    """The isolated state and config folders conftest points the environment at."""
    return {k: os.environ[k] for k in ("CTXTUI_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME") if k in os.environ}


def fake_agent(ws: Path, base_url: str, interactive: bool = False, **cli):
    environ = {**user_dirs(), "ANTHROPIC_API_KEY": SECRET, "ANTHROPIC_BASE_URL": base_url}
    config = load_config({"model": MODEL, **cli}, environ=environ, workspace=ws)
    return build_agent(config, interactive=interactive, resume=cli.get("resume"),
                       continue_=cli.get("continue_", False))


def demo_agent(ws: Path, interactive: bool = False, **cli):
    config = load_config({"model": "demo", **cli}, environ=user_dirs(), workspace=ws)
    return build_agent(config, interactive=interactive, resume=cli.get("resume"),
                       continue_=cli.get("continue_", False))


async def collect(agen) -> list[ev.Event]:
    return [e async for e in agen]


def of(events, cls):
    return [e for e in events if isinstance(e, cls)]


def heavy_tool_session(ws: Path, scale: float = 1.0, chunk: int | None = None):
    """Twelve 9.6 KB files and a scripted model that cats one with bash and greps on two of
    every three calls, with long reasoning: a small window fills fast, so every cheap layer
    (result budget, microcompact, collapse) acts. `scale` multiplies the files and the reasoning
    (for a bigger window); `chunk`: characters a text delta. Returns the fake server's responder."""
    for i in range(12):
        (ws / f"big{i}.txt").write_text(f"line {i}\n" * int(1200 * scale))
    n = {"i": 0}
    streamed = {"chunk": chunk} if chunk else {}

    def responder(body):
        if is_summary_request(body):
            return echo_responder(body)
        n["i"] += 1
        i = n["i"]
        if i % 3 == 0:
            return reply(f"Summary of step {i}: " + "details " * int(40 * scale), **streamed)
        return reply(f"step {i}: " + "reasoning " * int(400 * scale),
                     tool_use("bash", {"command": f"cat big{i % 12}.txt"}), tool_use("grep", {"pattern": "line 1"}),
                     **streamed)
    return responder


def record_events(agent) -> list[ev.Event]:
    """Wrap `agent.run` and `agent.compact` so every event they yield is also appended to the list
    returned: a TUI test drives the app and then reads what the loop said."""
    events: list[ev.Event] = []
    run, compact = agent.run, agent.compact

    async def rec_run(prompt):
        async for e in run(prompt):
            events.append(e)
            yield e

    async def rec_compact(focus=None):
        async for e in compact(focus):
            events.append(e)
            yield e

    agent.run, agent.compact = rec_run, rec_compact
    return events


def wait_for(pred, timeout: float = 30.0) -> bool:
    """Poll `pred` until true; the timeout is only a hang guard."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.05)
    return bool(pred())
