"""The side column mounts a frame after the rest of the screen (app/tui/widgets/side_panes.py):
the first frame does not wait for it, and nothing that came before it is lost."""
from __future__ import annotations

from agent_core import events as ev
from app.tui.app import CtxApp
from app.tui.widgets.side_panes import SidePanes
from tests.pilot_until import until
from tests.tui_fakes import FIXED_TIME, FakeAgent, context_event, cost_event

COMPACTION = ev.Compaction(layer="microcompact", trigger="auto", tokens_before=9_000, tokens_after=4_000,
                           duration_s=0.01, transcript_path=None, timestamp=FIXED_TIME - 60)


class EarlyApp(CtxApp):
    """Records what the first frame held, and feeds events and commands in before the side
    column is there (after the agent is shown, in on_mount, which comes before the first frame).
    (Not an on_mount of its own: Textual calls every class's on_mount.)"""

    def __init__(self, agent, **kw) -> None:
        super().__init__(agent, clock=lambda: FIXED_TIME, lazy_side=True, **kw)
        self.first_frame_had_side: bool | None = None
        self.early: list[str] = []

    async def show_agent(self, resumed: bool) -> None:
        await super().show_agent(resumed)
        self.early.append(f"side ready: {self.side.ready}")
        await self.handle_event(COMPACTION)
        await self.handle_event(ev.BreakerTripped(breaker="thrash", reason="refilled"))
        await self.handle_event(context_event(150_000))
        await self.handle_event(cost_event())
        self.run_slash("/cost")

    def _display(self, screen, renderable) -> None:
        if renderable is not None and self.first_frame_had_side is None:
            self.first_frame_had_side = bool(screen.query(SidePanes))
        super()._display(screen, renderable)


def resumed_agent() -> FakeAgent:
    agent = FakeAgent()
    agent.entries = []
    agent.compactions = [ev.Compaction(layer="autocompact", trigger="auto", tokens_before=7_000, tokens_after=1_500,
                                       duration_s=3.0, transcript_path=None, timestamp=FIXED_TIME - 3_600)]
    return agent


async def test_the_first_frame_is_drawn_before_the_side_column_and_it_gets_what_came_before():
    app = EarlyApp(resumed_agent())
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: app.side.ready and not app.figures.scheduled, "the side column and its figures")
        await pilot.pause()
        assert app.early == ["side ready: False"]
        assert app.first_frame_had_side is False
        # the context and cost figures given before it reached the panes, and the status line at once
        assert app.context_pane.context == context_event(150_000)
        assert app.cost_pane.cost == cost_event()
        assert app.status.context == context_event(150_000)
        # the timeline was reset, then got the compaction and the breaker trip, in that order
        assert app.timeline.row_count == 2 and app.timeline.breaker_trips == 1
        assert list(app.timeline.events.values()) == [COMPACTION]
        # /cost, typed before the pane existed, maximized it once it did
        assert app.screen.maximized is app.cost_pane


async def test_a_resumed_sessions_compactions_reach_the_timeline():
    agent = resumed_agent()

    class Resumed(CtxApp):
        async def show_agent(self, resumed: bool) -> None:    # as on resume: the logged compactions listed
            await super().show_agent(resumed=True)

    app = Resumed(agent, clock=lambda: FIXED_TIME, lazy_side=True)
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: app.side.ready, "the side column")
        await pilot.pause()
        assert app.timeline.count == 1
        assert list(app.timeline.events.values()) == agent.compactions


async def test_sidebar_toggle_in_the_first_frame_is_not_lost():
    class Toggles(CtxApp):
        async def show_agent(self, resumed: bool) -> None:
            await super().show_agent(resumed)
            self.action_toggle_sidebar()      # the side column is not mounted yet

    app = Toggles(FakeAgent(), clock=lambda: FIXED_TIME, lazy_side=True)
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: app.side.ready, "the side column")
        await pilot.pause()
        assert not app.query_one("#side").display       # wide: shown by default, so the toggle hid it


async def test_quitting_in_the_first_frame_mounts_nothing_and_raises_nothing():
    """Textual's Lazy mounted its widget even when the app was closing: a MountError on quit."""
    class QuitsAtOnce(CtxApp):
        async def show_agent(self, resumed: bool) -> None:
            await super().show_agent(resumed)
            self.exit(3)

    app = QuitsAtOnce(FakeAgent(), clock=lambda: FIXED_TIME, lazy_side=True)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
    assert app.return_value == 3 and not app.side.ready
