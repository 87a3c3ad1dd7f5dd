"""A changed file that is no longer a regular file (an attacker review): after the agent edited
README.md, something (bash, the user) put a folder, a FIFO or a symlink in its place. /diff and
/rewind killed the TUI on a folder (IsADirectoryError in a worker: exit 0) and hung it on a FIFO
(`open` waits for a writer; the rewind preview even on the event loop, so Ctrl+Q did nothing).
Now the file gets a line saying what it is, is never opened, and the app goes on."""
from __future__ import annotations

import os
import threading
import time
from contextlib import contextmanager

import pytest

from app.tui.screens.diff_view import DiffScreen
from app.tui.screens.rewind import RewindScreen
from tests.app.changed_files_helpers import EDIT, demo as _demo, turn as _turn
from tests.pilot_until import until

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
RELEASE_AFTER = 15.0      # past pilot_until's 10 s: a hang fails the test instead of hanging the suite


def _release(path, released: list) -> None:
    """A reader waiting on the FIFO at `path` gets EOF (opening it to write fails while none waits)."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        released.append(True)
    except OSError:
        pass


@contextmanager
def fifo_released(path):
    """Releases any reader blocked on the FIFO at `path` after RELEASE_AFTER seconds, and at the end
    (a thread still blocked there would hold the event loop's teardown for ever); yields a list
    that says whether one ever was."""
    stop, released = threading.Event(), []

    def watch():
        if not stop.wait(RELEASE_AFTER):
            while not stop.wait(0.2):
                _release(path, released)
        for _ in range(150 if released else 0):   # the failing case: later reads until teardown
            _release(path, released)
            time.sleep(0.2)
    threading.Thread(target=watch, daemon=True).start()
    try:
        yield released
    finally:
        for _ in range(5):
            _release(path, released)
            time.sleep(0.05)
        stop.set()


def _replace(path, kind: str) -> None:
    os.unlink(path)
    if kind == "folder":
        os.mkdir(path)
        (path / "inside.txt").write_text("not shown\n")
    else:
        os.mkfifo(path)


async def _still_responds(app, pilot) -> None:
    """Esc closes the dialog and the app is still running."""
    await pilot.press("escape")
    await until(pilot, lambda: not isinstance(app.screen, (DiffScreen, RewindScreen)), "the dialog closed")
    assert app.is_running


NOTES = {"folder": "README.md: now a folder, not read", "fifo": "README.md: now a FIFO, not read"}


@pytest.mark.parametrize("kind", ["folder", pytest.param("fifo", marks=needs_fifo)])
async def test_diff_names_a_file_now_a_folder_or_fifo_and_the_app_goes_on(tmp_path, kind):
    ws, app = _demo(tmp_path)
    started = time.monotonic()
    with fifo_released(ws / "README.md") as released:
        async with app.run_test(size=(120, 40)) as pilot:
            await _turn(app, pilot, EDIT, 1)
            await until(pilot, lambda: app.cost_pane.changes, "the changed files")
            _replace(ws / "README.md", kind)
            app.run_slash("/diff")
            await until(pilot, lambda: isinstance(app.screen, DiffScreen) and app.screen.query("#diff-body"),
                        "the diff")
            assert NOTES[kind] in str(app.screen.query_one("#diff-body").render())
            await _still_responds(app, pilot)
    assert not released and time.monotonic() - started < RELEASE_AFTER


@pytest.mark.parametrize("kind", ["folder", pytest.param("fifo", marks=needs_fifo)])
async def test_rewind_names_a_file_now_a_folder_or_fifo_and_the_app_goes_on(tmp_path, kind):
    ws, app = _demo(tmp_path)
    started = time.monotonic()
    with fifo_released(ws / "README.md") as released:
        async with app.run_test(size=(120, 40)) as pilot:
            await _turn(app, pilot, "find main", 1)
            await _turn(app, pilot, EDIT, 2)
            _replace(ws / "README.md", kind)
            app.run_slash("/rewind")
            await until(pilot, lambda: isinstance(app.screen, RewindScreen), "the picker")
            await pilot.press("enter")                      # the newest prompt: the edit
            await until(pilot, lambda: isinstance(app.screen, DiffScreen) and app.screen.query("#diff-about"),
                        "what would be restored")
            about = str(app.screen.query_one("#diff-about").render())
            assert "Cannot be restored: " + NOTES[kind].replace(": ", " (", 1) + ")" in about
            await _still_responds(app, pilot)
    assert not released and time.monotonic() - started < RELEASE_AFTER
    assert (ws / "README.md").is_dir() if kind == "folder" else not (ws / "README.md").is_file()
