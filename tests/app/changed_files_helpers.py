"""The changed-files TUI tests' session: the app on the demo model in a sample workspace, and a
turn whose edit_file call changes README.md."""
from __future__ import annotations

from app.tui.launch import build_app
from tests.agent_helpers import make_workspace, user_dirs
from tests.pilot_until import until

EDIT = "replace 'A small project' with 'A tiny project' in README.md"


def demo(tmp_path):
    ws = make_workspace(tmp_path)
    return ws, build_app({"model": "demo", "allow": "all"}, environ=user_dirs(), workspace=ws, claude_root=None)


async def turn(app, pilot, text, n):
    app.run_prompt(text)
    await until(pilot, lambda: app.agent.turns >= n and not app.busy, "the turn", 30)
