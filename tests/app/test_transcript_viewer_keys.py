"""The transcript viewer's keys after `/` (a user's report): while the search box has the keys `]`,
`[` and `f` are typed into it; once Enter submits the search they move the list again; Esc in the
box leaves the search and a second Esc closes the viewer; the counter never shows an index above
its total and says "counting…" while the log loads; and at 80×24 the list fills the screen."""
from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from textual.widgets import Input

from app.tui.app import CtxApp
from app.tui.screens.transcript_viewer import TranscriptViewer
from app.tui.widgets.record_list import RecordList
from tests.app.snapshot_helpers import settled
from tests.pilot_until import until
from tests.tui_fakes import FIXED_TIME, FakeAgent


def write_log(path: Path, n: int = 200) -> Path:
    lines = []
    for i in range(n):
        if i % 50 == 25:
            lines.append({"type": "system", "subtype": "compact_boundary",
                          "compactMetadata": {"trigger": "auto", "preTokens": 1000}})
        else:
            lines.append({"type": "user", "message": {"role": "user",
                                                      "content": f"line {i}" + (" needle" if i % 7 == 0 else "")}})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


async def open_viewer(app: CtxApp, pilot, path: Path, gate: threading.Event | None = None) -> TranscriptViewer:
    viewer = TranscriptViewer(path, gate=gate)
    await app.push_screen(viewer)
    if gate is None:
        await until(pilot, lambda: viewer.done, "the log loaded")
    await pilot.pause()
    return viewer


async def test_keys_go_to_the_search_box_until_enter_then_to_the_list(tmp_path):
    app = CtxApp(FakeAgent(), clock=lambda: FIXED_TIME)
    async with app.run_test(size=(80, 24)) as pilot:
        viewer = await open_viewer(app, pilot, write_log(tmp_path / "log.jsonl"))
        box = viewer.query_one("#viewer-search", Input)
        lst = viewer.query_one(RecordList)
        await pilot.press("slash", "right_square_bracket", "left_square_bracket", "f")
        assert box.value == "][f" and viewer.kind_filter == "all" and lst.cursor == 0
        box.value = ""
        await pilot.press(*"needle", "enter")
        await pilot.pause()
        assert viewer.query_text == "needle" and app.focused is lst
        at = lst.cursor
        await pilot.press("n")
        assert lst.cursor > at
        await pilot.press("right_square_bracket")
        assert viewer.records[lst.rows[lst.cursor]].boundary
        await pilot.press("f")
        assert viewer.kind_filter != "all" and box.value == "needle"


async def test_esc_in_the_search_leaves_it_and_a_second_esc_closes_the_viewer(tmp_path):
    app = CtxApp(FakeAgent(), clock=lambda: FIXED_TIME)
    async with app.run_test(size=(80, 24)) as pilot:
        viewer = await open_viewer(app, pilot, write_log(tmp_path / "log.jsonl"))
        # Esc pressed with the `/` (before the box's focus lands) still leaves the search only
        await pilot.press("slash", "escape")
        await pilot.pause()
        assert app.screen is viewer and not viewer.searching
        assert app.focused is viewer.query_one(RecordList)
        await pilot.press("slash", *"needle", "escape")
        await pilot.pause()
        assert app.screen is viewer and viewer.query_text == ""   # an unsent search is dropped
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is not viewer


async def test_the_match_counter_says_counting_until_the_log_is_loaded(tmp_path):
    gate = threading.Event()
    app = CtxApp(FakeAgent(), clock=lambda: FIXED_TIME)
    async with app.run_test(size=(80, 24)) as pilot:
        path = write_log(tmp_path / "big.jsonl", n=20_000)
        viewer = await open_viewer(app, pilot, path, gate=gate)
        await until(pilot, lambda: viewer.records, "a first batch")
        assert not viewer.done
        await pilot.press("slash", *"needle", "enter")
        await pilot.pause()
        text = viewer.match_text()
        assert "counting…" in text and " of " not in text, text
        gate.set()
        await until(pilot, lambda: viewer.done, "the log loaded")
        await pilot.pause()
        text = viewer.match_text()
        k, total = text.split("match ")[1].split(" of ")
        assert int(k.replace(",", "")) <= int(total.replace(",", "")), text
        assert "counting" not in text


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
async def test_the_list_fills_the_screen(tmp_path, size):
    app = CtxApp(FakeAgent(), clock=lambda: FIXED_TIME)
    async with app.run_test(size=size) as pilot:
        viewer = await open_viewer(app, pilot, write_log(tmp_path / "log.jsonl"))
        lst = viewer.query_one(RecordList)
        # the screen less the footer, the border and the status line: every row is the list's
        assert lst.region.height == size[1] - 1 - 2 - 1
        await pilot.press("down")          # a record's detail: a few rows under the list, no more
        await pilot.pause()
        detail = viewer.query_one("#viewer-detail")
        assert 0 < detail.region.height <= (6 if size[1] < 32 else 10)
        assert lst.region.height + detail.region.height == size[1] - 4


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
def test_viewer_after_a_search_snapshot(snap_compare, tmp_path, size):
    path = write_log(tmp_path / "log.jsonl")
    app = CtxApp(FakeAgent(), clock=lambda: FIXED_TIME)

    async def run_before(pilot):
        app.prompt_input.cursor_blink = False
        viewer = await open_viewer(app, pilot, path)
        viewer.query_one("#viewer-search", Input).cursor_blink = False
        await pilot.press("slash", *"needle", "enter")
        await settled(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)
