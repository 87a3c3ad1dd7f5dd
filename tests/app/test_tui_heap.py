"""The `ctxtui` command's app settles the collector after its first frame and puts it back when
it ends (app/tui/heap.py); an app built otherwise (tests, embedding) leaves it alone."""
from __future__ import annotations

import gc

from app.tui import launch
from app.tui.heap import OLDEST_EVERY, YOUNG_EVERY
from tests.demo_project import fixed_place


async def test_the_command_app_freezes_start_up_and_puts_the_collector_back_on_exit():
    before = gc.get_threshold()
    assert gc.get_freeze_count() == 0
    with fixed_place() as (ws, env):
        app = launch.build_app({"model": "demo"}, environ=env, workspace=ws, claude_root=None, settle_heap=True)
        async with app.run_test() as pilot:
            await pilot.pause()
            await pilot.pause()
            assert gc.get_freeze_count() > 10_000          # start-up's survivors, no longer walked
            assert gc.get_threshold() == (max(before[0], YOUNG_EVERY), before[1], max(before[2], OLDEST_EVERY))
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == before


async def test_an_app_built_without_it_leaves_the_collector_alone():
    before = gc.get_threshold()
    with fixed_place() as (ws, env):
        app = launch.build_app({"model": "demo"}, environ=env, workspace=ws, claude_root=None)
        async with app.run_test() as pilot:
            await pilot.pause()
            assert gc.get_freeze_count() == 0 and gc.get_threshold() == before


def test_the_ctxtui_command_asks_for_it(monkeypatch):
    seen = {}

    class Stop(Exception):
        pass

    def fake_build_app(*a, **kw):
        seen.update(kw)
        raise Stop

    monkeypatch.setattr(launch, "build_app", fake_build_app)
    monkeypatch.setattr(launch, "settle_trust", lambda *a, **k: "")
    try:
        launch.run_tui(launch.argparse.Namespace(resume=None, continue_=False))
    except Stop:
        pass
    assert seen.get("settle_heap") is True and seen.get("paced") is True and seen.get("lazy_side") is True


async def test_a_held_collector_runs_again_after_the_first_frame():
    """The command holds the collector off while the TUI loads (heap.hold); the first frame's
    settle collects once and turns it back on."""
    from app.tui import heap
    assert gc.isenabled()
    heap.hold()
    try:
        assert not gc.isenabled()
        with fixed_place() as (ws, env):
            app = launch.build_app({"model": "demo"}, environ=env, workspace=ws, claude_root=None, settle_heap=True)
            async with app.run_test() as pilot:
                await pilot.pause()
                await pilot.pause()
                assert gc.isenabled() and gc.get_freeze_count() > 10_000
    finally:
        heap.release()
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_the_ctxtui_command_holds_the_collector_for_the_tui_and_always_turns_it_back_on(monkeypatch):
    from app.cli import main as cli_main
    seen = []

    def fake_run_tui(args):
        seen.append(gc.isenabled())
        return 2              # a setting error: no first frame, so nothing settled the heap

    monkeypatch.setattr(launch, "run_tui", fake_run_tui)
    assert cli_main.main(["--model", "demo"]) == 2
    assert seen == [False] and gc.isenabled()


def test_release_does_not_turn_on_a_collector_someone_else_turned_off():
    from app.tui import heap
    gc.disable()
    try:
        heap.hold()
        heap.release()
        assert not gc.isenabled()
    finally:
        gc.enable()
