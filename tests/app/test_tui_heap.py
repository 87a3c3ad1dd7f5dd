"""The `ctxtui` command's app settles the collector after its first frame and puts it back when
it ends (app/tui/heap.py); an app built otherwise (tests, embedding) leaves it alone."""
from __future__ import annotations

import gc

from app.tui import launch
from app.tui.heap import OLDEST_EVERY
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
            assert gc.get_threshold() == (before[0], before[1], max(before[2], OLDEST_EVERY))
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
    assert seen.get("settle_heap") is True and seen.get("paced") is True
