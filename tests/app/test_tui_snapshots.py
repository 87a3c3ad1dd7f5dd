"""Snapshot tests (pytest-textual-snapshot) at 120×40, and the main screen at 80×24 and 200×60 too.
The panes are driven with fixed events (tests/tui_fakes.py): fixed session id, fixed clock, fixed file
times, no live clock text.
Update after an intended change with `pytest tests/app/test_tui_snapshots.py --snapshot-update`."""
from __future__ import annotations

import json
import os

import pytest

from agent_core import events as ev
from app.tui.screens.permission import PermissionScreen
from app.tui.app import CtxApp
from tests.app.snapshot_helpers import STATE_TOKENS, fill, settled
from tests.tui_fakes import FIXED_TIME, SESSION_ID, FakeAgent

SIZE = (120, 40)




def make_app(**kw) -> CtxApp:
    return CtxApp(FakeAgent(), clock=lambda: FIXED_TIME, **kw)


@pytest.mark.parametrize("state", list(STATE_TOKENS))
def test_main_screen_in_each_context_state(snap_compare, utc, state):
    app = make_app()

    async def run_before(pilot):
        await fill(app, state, pilot)
        await settled(pilot)
        assert app.context_pane.state == state

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (200, 60)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_main_screen_at_each_size(snap_compare, utc, size):
    """80×24: the sidebar collapsed, the status line carries the figures; 120×40: both side by
    side; 200×60: wider panes, a taller plot, the cost pane and timeline sharing the height."""
    app = make_app()

    async def run_before(pilot):
        await fill(app, "warning", pilot)
        await settled(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


DIALOG_SIZES = pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])


@DIALOG_SIZES
@pytest.mark.parametrize("command", ["/context", "/help"], ids=["context", "help"])
def test_context_and_help_screens(snap_compare, utc, size, command):
    app = make_app()

    async def run_before(pilot):
        await fill(app, "warning", pilot)
        app.run_slash(command)
        await settled(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


def test_cost_pane_maximized(snap_compare, utc):
    app = make_app()

    async def run_before(pilot):
        await fill(app, "ok", pilot)
        app.run_slash("/cost")
        await settled(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


@DIALOG_SIZES
def test_permission_modal(snap_compare, utc, size):
    app = make_app()
    request = ev.PermissionRequest(id="t9", name="edit_file", input={
        "path": "app/tui.py", "old_string": "def hello():\n    return 'world'\n",
        "new_string": "def hello(name):\n    return f'hello {name}'\n"})

    async def run_before(pilot):
        await fill(app, "ok", pilot)
        app.push_screen(PermissionScreen(request))
        await settled(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


def test_transcript_browser(snap_compare, utc, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))   # roots show as ~/...
    sessions = tmp_path / ".ctxtui" / "sessions"
    claude = tmp_path / ".claude" / "projects"
    files = {
        sessions / f"{SESSION_ID}.jsonl": 40_000,
        sessions / SESSION_ID / "transcripts" / "20260101T001500-auto.jsonl": 180_000,
        sessions / SESSION_ID / "transcripts" / "20260101T003000-manual.jsonl": 90_000,
        sessions / "20251231T230000-012345.jsonl": 12_000,
        claude / "-home-me-project" / "5f0c6a1e-0000-4000-8000-000000000000.jsonl": 2_400_000,
    }
    for i, (path, size) in enumerate(files.items()):
        path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps({"type": "user", "message": {"role": "user", "content": "x" * 200}}) + "\n"
        path.write_text(line * (size // len(line)))
        os.utime(path, (FIXED_TIME - i * 3600, FIXED_TIME - i * 3600))
    app = make_app(sessions_root=sessions, claude_root=claude)

    async def run_before(pilot):
        app.prompt_input.cursor_blink = False
        app.run_slash("/transcripts")
        await settled(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
