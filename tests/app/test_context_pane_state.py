"""The context pane wears its state (border and gauge colour) as one class, `-ok` … `-blocking`,
moving with every figure, and the gauge's colour follows in the same frame."""
from __future__ import annotations

from textual.app import App, ComposeResult

from agent_core.events import ContextUpdate
from app.stylesheets import stylesheets
from app.widgets.context_pane import STATES, ContextPane
from app.widgets.gauge import Gauge


class Host(App):
    CSS_PATH = stylesheets("panes.tcss")

    def compose(self) -> ComposeResult:
        yield ContextPane()


def figure(state: str, tokens: int) -> ContextUpdate:
    return ContextUpdate(tokens=tokens, window=20_000, threshold=15_000, state=state,
                         percent_left=100 * (1 - tokens / 20_000))


async def test_the_pane_carries_exactly_its_states_class():
    app = Host()
    async with app.run_test(size=(60, 30)) as pilot:
        pane = app.query_one(ContextPane)
        gauge = pane.query_one(Gauge)
        colours = {}
        for state, tokens in (("ok", 2_000), ("warning", 13_000), ("error", 14_500), ("ok", 3_000),
                              ("blocking", 19_900), ("ok", 1_000)):
            pane.context = figure(state, tokens)
            await pilot.pause()
            worn = [s for s in STATES if pane.has_class(f"-{s}")]
            assert worn == [state], (state, worn)
            colours.setdefault(state, gauge.get_component_rich_style("gauge--fill").color)
            assert gauge.get_component_rich_style("gauge--fill").color == colours[state]
        assert len({colours["ok"], colours["warning"], colours["error"]}) == 3
