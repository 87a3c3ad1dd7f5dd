"""The compaction timeline (app/widgets/timeline.py): its row cursor moves with the keys, keeps
the cursor row in view under the header, and Enter or a click on a row names that compaction."""
from __future__ import annotations

from textual.app import App, ComposeResult

from agent_core import events as ev
from app.widgets.timeline import Timeline

ROWS = 30


class Holder(App):
    CSS = "Timeline { height: 8; width: 60; }"
    AUTO_FOCUS = None       # focused by the test (or the click), as in the TUI where the prompt has it

    def __init__(self) -> None:
        super().__init__()
        self.selected: list[ev.Compaction] = []

    def compose(self) -> ComposeResult:
        yield Timeline(clock=lambda: 0.0, selectable=True)

    def on_timeline_compaction_selected(self, message: Timeline.CompactionSelected) -> None:
        self.selected.append(message.compaction)


def compaction(i: int) -> ev.Compaction:
    return ev.Compaction(layer="microcompact", trigger="auto", tokens_before=10_000 + i, tokens_after=5_000)


def shown_rows(timeline: Timeline) -> list[int]:
    """The row indexes drawn below the header (each line carries its row in its style's meta)."""
    rows = []
    for y in range(1, timeline.scrollable_content_region.height):
        metas = {seg.style.meta.get("row") for seg in timeline.render_line(y) if seg.style}
        rows.extend(r for r in metas if r is not None)
    return rows


async def test_the_cursor_keys_move_the_row_cursor_and_keep_it_in_view():
    app = Holder()
    async with app.run_test() as pilot:
        timeline = app.query_one(Timeline)
        events = [compaction(i) for i in range(ROWS)]
        for c in events:
            timeline.add_compaction(c)
        await pilot.pause()
        assert ROWS - 1 in shown_rows(timeline) and 0 not in shown_rows(timeline)   # the newest in view
        timeline.focus()
        await pilot.pause()
        assert timeline.show_cursor and timeline.cursor_row == ROWS - 1
        moves = [("up", ROWS - 2), ("pageup", ROWS - 12), ("home", 0), ("down", 1), ("end", ROWS - 1),
                 ("home", 0), ("pagedown", 10), ("up", 9)]
        for key, row in moves:
            await pilot.press(key)
            assert timeline.cursor_row == row, key
            assert row in shown_rows(timeline), key
        await pilot.press("enter")
        await pilot.pause()
        assert app.selected == [events[9]]
        await pilot.press("home", "enter")
        await pilot.pause()
        assert app.selected == [events[9], events[0]]
        # the cursor shows only while the table has focus
        timeline.blur()
        await pilot.pause()
        assert not timeline.show_cursor


async def test_a_click_on_a_row_selects_that_compaction():
    app = Holder()
    async with app.run_test() as pilot:
        timeline = app.query_one(Timeline)
        events = [compaction(i) for i in range(3)]
        for c in events:
            timeline.add_compaction(c)
        await pilot.pause()
        y = next(y for y in range(1, timeline.size.height)
                 if any(seg.style and seg.style.meta.get("row") == 1 for seg in timeline.render_line(y)))
        await pilot.click(Timeline, offset=(3, y))
        await pilot.pause()
        assert app.selected == [events[1]] and timeline.cursor_row == 1
