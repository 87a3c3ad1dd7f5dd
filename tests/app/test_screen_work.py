"""Work a turn asks of the screen: no whole-screen repaint for the app's own state, and a pane
figure that keeps its size does not lay the whole screen out."""
from __future__ import annotations

import asyncio

from textual._compositor import Compositor
from textual.app import App, ComposeResult
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Static

from agent_core import events as ev
from app.tui import event_view
from app.tui.app import CtxApp
from app.tui.event_view import EventView
from app.widgets.update_in_place import update_in_place
from tests.tui_fakes import FakeAgent

SIZE = (120, 40)


async def test_a_turn_never_repaints_the_whole_screen(monkeypatch):
    """`busy` going on and off (twice a turn) repainted the app: every widget on the screen drew
    again, the side tables too."""
    full = []
    real = Compositor.render_full_update

    def counting(self, *a, **k):
        full.append(1)
        return real(self, *a, **k)

    app = CtxApp(FakeAgent(chunks=10), clock=lambda: 0.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        monkeypatch.setattr(Compositor, "render_full_update", counting)
        for i in range(3):
            app.fill_prompt(f"prompt {i}")
            await pilot.press("enter")
            await app.workers.wait_for_complete()
            await pilot.pause()
        assert app.agent.turns == 3
        assert not full, f"{len(full)} whole-screen repaints in 3 turns"


class Figures(App):
    def compose(self) -> ComposeResult:
        yield Static("cache hit 84% · saved $0.81", id="figure")
        yield Static("other", id="other")


async def test_a_figure_that_keeps_its_size_is_drawn_without_a_layout(monkeypatch):
    app = Figures()
    async with app.run_test(size=(40, 10)) as pilot:
        await pilot.pause()
        layouts = []
        real = Screen._refresh_layout

        def counting(screen, *a, **k):
            layouts.append(1)
            return real(screen, *a, **k)

        monkeypatch.setattr(Screen, "_refresh_layout", counting)
        figure = app.query_one("#figure", Static)
        update_in_place(figure, Content("cache hit 85% · saved $0.82"))
        await pilot.pause()
        assert not layouts and "85%" in str(figure.render())
        # a figure that needs more lines than it has: laid out, and the line below moves down
        update_in_place(figure, Content("cache hit 85% · saved $0.82 · compaction $0.0095 · burn $1.37/h"))
        await pilot.pause()
        assert layouts and figure.size.height == 2
        assert app.query_one("#other").region.y == 2


async def test_events_that_come_close_together_are_shown_in_one_frame(monkeypatch):
    """A model call's events come a few ms apart (the loop waits on the model between them): shown
    one batch (one frame) each, they cost a frame apiece. Those within BATCH_S of a batch's first
    share it; one that comes later starts the next, so nothing waits longer than that."""
    batches: list[list[str]] = []
    real_batch = CtxApp.batch_update

    def batch_update(self):
        batches.append([])
        return real_batch(self)

    async def handle(self, e):
        batches[-1].append(e.message)

    async def stream():
        for message, pause in (("a", 0), ("b", 0.005), ("c", 0.01), ("d", 1.0), ("e", 0)):
            await asyncio.sleep(pause)
            yield ev.Notice(message=message)

    app = CtxApp(FakeAgent(chunks=1), clock=lambda: 0.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        monkeypatch.setattr(CtxApp, "batch_update", batch_update)
        monkeypatch.setattr(EventView, "handle", handle)
        monkeypatch.setattr(event_view, "BATCH_S", 0.3)     # wide enough for a loaded machine
        await app.event_view.show(stream())
    assert batches == [["a", "b", "c"], ["d", "e"]]


async def test_a_burst_longer_than_a_batch_is_shown_in_several(monkeypatch):
    """Events that keep coming without a pause still end their batch after BATCH_S: the screen shows
    a long burst as it goes, not once at its end."""
    batches: list[list[str]] = []
    real_batch = CtxApp.batch_update
    clock = [0.0]

    def batch_update(self):
        batches.append([])
        return real_batch(self)

    async def handle(self, e):
        batches[-1].append(e.message)
        clock[0] += 0.02            # each event takes 20 ms to show

    async def stream():
        for i in range(10):
            yield ev.Notice(message=str(i))

    app = CtxApp(FakeAgent(chunks=1), clock=lambda: 0.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        monkeypatch.setattr(CtxApp, "batch_update", batch_update)
        monkeypatch.setattr(EventView, "handle", handle)
        monkeypatch.setattr(event_view, "BATCH_S", 0.05)
        monkeypatch.setattr(event_view.time, "monotonic", lambda: clock[0])
        await app.event_view.show(stream())
    assert [m for b in batches for m in b] == [str(i) for i in range(10)]
    assert [len(b) for b in batches] == [3, 3, 3, 1], batches
