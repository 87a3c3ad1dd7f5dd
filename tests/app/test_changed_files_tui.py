"""Changed files in the TUI (issue 28): the cost pane lists the files the agent's write and edit
calls changed with lines added and removed, /diff shows them, and /rewind shows what it would put
back and restores files only when told (r), or the conversation only (c); snapshots at 80×24 and
120×40; a hostile file name and diff line are shown, not obeyed."""
from __future__ import annotations

import pytest

from agent_core.tools.changed_files import FileChange
from app.tui.app import CtxApp
from app.tui.screens.diff_view import DiffScreen, diff_content
from app.tui.screens.rewind import RewindScreen
from app.widgets.cost_pane import changes_text
from tests.app.changed_files_helpers import EDIT, demo as _demo, turn as _turn
from tests.app.snapshot_helpers import fill, settled
from tests.pilot_until import until
from tests.tui_fakes import FIXED_TIME, FakeAgent

WRITE = "write notes to the file notes.md"
DIFF = ("--- a/README.md (before the session)\n+++ b/README.md (now)\n@@ -1,3 +1,3 @@\n # Sample\n \n"
        "-A small project used by the tests.\n+A tiny project used by the tests.\n"
        "--- /dev/null\n+++ b/notes.md (now)\n@@ -0,0 +1,2 @@\n+\x1b[2Jevil line\n+second\n")


async def test_the_cost_pane_lists_changed_files_and_diff_shows_them(tmp_path):
    ws, app = _demo(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await _turn(app, pilot, EDIT, 1)
        await until(pilot, lambda: app.cost_pane.changes, "the changed files")
        (row,) = app.cost_pane.changes
        assert (row.shown, row.added, row.removed) == ("README.md", 1, 1)
        text = str(app.cost_pane.query_one("#cost-changes").render())
        assert "changed 1 file +1 −1" in text and "README.md" in text
        app.run_slash("/diff")
        await until(pilot, lambda: isinstance(app.screen, DiffScreen) and app.screen.query("#diff-body"), "the diff")
        body = str(app.screen.query_one("#diff-body").render())
        assert "-A small project" in body and "+A tiny project" in body
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, DiffScreen), "closed")
    assert "A tiny project" in (ws / "README.md").read_text()


@pytest.mark.parametrize("answer", ["r", "c", "escape"])
async def test_rewind_shows_the_diff_and_restores_only_when_told(tmp_path, answer):
    ws, app = _demo(tmp_path)
    before = (ws / "README.md").read_text()
    async with app.run_test(size=(120, 40)) as pilot:
        await _turn(app, pilot, "find main", 1)
        await _turn(app, pilot, EDIT, 2)
        app.run_slash("/rewind")
        await until(pilot, lambda: isinstance(app.screen, RewindScreen), "the picker")
        await pilot.press("enter")                      # the newest prompt: the edit
        await until(pilot, lambda: isinstance(app.screen, DiffScreen) and app.screen.query("#diff-body"),
                    "what would be restored")
        body = str(app.screen.query_one("#diff-body").render())
        assert "-A tiny project" in body and "+A small project" in body    # now -> restored
        await pilot.press(answer)
        await until(pilot, lambda: not isinstance(app.screen, DiffScreen), "answered")
        if answer == "escape":
            await pilot.pause()
            assert app.agent.turns == 2 and len(app.agent.rewind_points()) == 2
            assert "A tiny project" in (ws / "README.md").read_text()
            return
        await until(pilot, lambda: app.prompt_input.text == EDIT, "the prompt back in the input")
        assert len(app.agent.rewind_points()) == 1
        restored = (ws / "README.md").read_text() == before
        assert restored is (answer == "r")
        if answer == "r":
            await until(pilot, lambda: app.cost_pane.changes == (), "the list emptied")


def test_hostile_names_and_lines_are_shown_not_obeyed():
    changes = (FileChange("evil\x1b[31m\n.md", 2, 0, "created"),)
    assert "\x1b" not in changes_text(changes, 4).plain and "␛" in changes_text(changes, 4).plain
    assert "\x1b" not in diff_content(DIFF).plain


def test_the_side_pane_lists_four_files_and_says_how_many_more():
    changes = tuple(FileChange(f"f{i}.py", i, 1, "modified") for i in range(6))
    text = changes_text(changes, 4).plain
    assert text.splitlines()[0] == "changed 6 files +15 −6"
    assert "f3.py" in text and "f4.py" not in text and "… 2 more" in text
    assert "f5.py" in changes_text(changes, None).plain


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
def test_diff_screen_snapshot(snap_compare, utc, size):
    app = CtxApp(FakeAgent(), clock=lambda: FIXED_TIME)

    async def run_before(pilot):
        await fill(app, "ok", pilot)
        app.push_screen(DiffScreen("Rewind: restore files?", "The agent changed 2 files since this prompt.",
                                   DIFF, ask_restore=True))
        await settled(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
def test_cost_pane_with_changed_files_snapshot(snap_compare, utc, size):
    app = CtxApp(FakeAgent(), clock=lambda: FIXED_TIME)

    async def run_before(pilot):
        await fill(app, "ok", pilot)
        app.cost_pane.changes = (FileChange("src/app.py", 12, 3, "modified"), FileChange("notes.md", 40, 0, "created"))
        await settled(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


async def test_the_restore_question_shows_a_hostile_file_name_escaped():
    app = CtxApp(FakeAgent(), clock=lambda: FIXED_TIME)
    async with app.run_test(size=(80, 24)) as pilot:
        app.push_screen(DiffScreen("Rewind: restore files?", "Cannot be restored: evil\x1b[2J.md (too large).", DIFF,
                                   ask_restore=True))
        await until(pilot, lambda: app.screen.query("#diff-about"), "the screen")
        about = str(app.screen.query_one("#diff-about").render())
        assert "\x1b" not in about and "␛[2J" in about
