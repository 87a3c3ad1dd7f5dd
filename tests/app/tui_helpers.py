"""Driving the TUI with Pilot in tests: the app on the offline demo model or on the real SDK against
the fake server, typing a prompt and waiting for the turn to end."""
from __future__ import annotations

from pathlib import Path

from textual.worker import WorkerState

from agent_core import events as ev
from agent_core.providers.demo.model import DemoModel
from app.tui.launch import build_app
from app.tui.screens.permission import PermissionScreen
from tests.agent_helpers import MODEL, SECRET, record_events, user_dirs


# ---- on the offline demo model -----------------------------------------------------------------------

def make_app(workspace: Path, *, window: int | None = None, allow_all: bool = True, chunk_delay: float = 0.0,
             sandbox: str | None = None, **kw):
    cli: dict = {"model": "demo"}
    if allow_all:
        cli["allow"] = ["all"]
    if sandbox:
        cli["sandbox"] = sandbox
    env = {"CTXTUI_CONTEXT_WINDOW": str(window)} if window else {}
    client = None
    if chunk_delay:
        client = DemoModel(workspace, context_window=window or 30_000, chunk_delay=chunk_delay)
    kw.setdefault("claude_root", None)
    app = build_app(cli, environ=env, workspace=workspace, client=client, **kw)
    events = record_events(app.agent)
    return app, events


def agent_running(app) -> bool:
    return any(w.group == "agent" and w.state in (WorkerState.PENDING, WorkerState.RUNNING) for w in app.workers)


async def send(app, pilot, text: str, answer: str | None = None) -> list[ev.PermissionRequest]:
    """Type `text`, press Enter, wait for the turn to end; answer permission modals with `answer`."""
    app.prompt_input.focus()
    app.fill_prompt(text)
    await pilot.press("enter")
    asked: list[ev.PermissionRequest] = []
    await pilot.pause()
    while agent_running(app):
        if isinstance(app.screen, PermissionScreen):
            assert answer is not None, f"unexpected permission request for {app.screen.request.name}"
            asked.append(app.screen.request)
            await pilot.press(answer)
        await pilot.pause(0.01)
    await pilot.pause()
    return asked


# ---- on the real SDK against the fake server -------------------------------------------------------

SUMMARY = ("<analysis>what happened</analysis>\n<summary>\n1. Primary Request and Intent: "
           + "the user explored the sample project and asked about its modules. " * 12 + "\n</summary>")


def fake_app(ws: Path, base_url: str):
    env = {**user_dirs(), "ANTHROPIC_API_KEY": SECRET, "ANTHROPIC_BASE_URL": base_url}
    app = build_app({"model": MODEL, "allow": ["all"]}, environ=env, workspace=ws, claude_root=None)
    events = record_events(app.agent)
    return app, events


async def wait_idle(app, pilot) -> None:
    await pilot.pause()
    while app.busy:
        await pilot.pause(0.02)
    await pilot.pause()


async def prompt(app, pilot, text: str) -> None:
    app.prompt_input.focus()
    app.fill_prompt(text)
    await pilot.press("enter")
    await wait_idle(app, pilot)
