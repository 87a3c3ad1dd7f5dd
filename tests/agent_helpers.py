"""Building agents for tests: the real SDK against the fake server, or the demo model, in a tmp workspace."""
from __future__ import annotations

import os
from pathlib import Path

from agent_core import events as ev
from agent_core.config import load_config
from agent_core.loop.factory import build_agent

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
