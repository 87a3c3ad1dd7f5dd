"""The next request's price on screen (issue 27): the context pane and the status line show the
cached and new tokens, the dollars warm and cold and the cache's time left; it counts down with
the clock, goes cold at the TTL, and follows the prompt being typed (a /command is not sent)."""
from __future__ import annotations

import pytest

from compaction.estimate import estimate_text
from app.tui.app import CtxApp
from app.widgets.next_request import from_event, pane_text, status_forms
from tests.tui_fakes import FIXED_TIME, FakeAgent, context_event

TYPED = "please refactor the parser and keep every test green " * 4


class Clock:
    def __init__(self) -> None:
        self.t = FIXED_TIME

    def __call__(self) -> float:
        return self.t


async def shown(app, pilot) -> tuple[str, str]:
    await pilot.pause()
    for _ in range(50):
        if not app.figures.scheduled:
            break
        await pilot.pause(0.01)
    return str(app.context_pane.query_one("#ctx-next").visual), app.status.fit(200).plain


@pytest.mark.slow
async def test_the_pane_and_status_line_show_count_down_and_follow_the_prompt():
    clock = Clock()
    app = CtxApp(FakeAgent(), clock=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        event = context_event(60_000)           # 57,600 cached, 2,400 new, 272 s left
        await app.handle_event(event)
        pane, status = await shown(app, pilot)
        assert "58k cached · 2.4k new · cache 4:32 left" in pane
        assert "$0.03 if warm · $0.23 if cold" in pane
        assert "next $0.03 warm / $0.23 cold · cache 4:32 left" in status

        clock.t += 61                           # the app's one-second tick hands the countdown down
        await pilot.pause(1.3)
        pane, status = await shown(app, pilot)
        assert "cache 3:31 left" in pane and "cache 3:31 left" in status

        app.prompt_input.insert(TYPED)          # the prompt being typed is written on top
        pane, status = await shown(app, pilot)
        extra = estimate_text(TYPED)
        nr = app.context_pane.next_request
        assert nr.uncached_tokens == 2_400 + extra and nr.cached_tokens == 57_600
        assert nr.usd_if_cold > from_event(event.next_request).usd_if_cold
        app.prompt_input.clear()
        app.prompt_input.insert("/compact now")  # a command: nothing is sent
        await shown(app, pilot)
        assert app.context_pane.next_request.uncached_tokens == 2_400

        clock.t += 300                          # past the TTL: cold
        await pilot.pause(1.3)
        pane, status = await shown(app, pilot)
        assert "cache cold" in pane and "next $0.23 cold" in app.status.fit(80).plain


def test_the_status_forms_shrink_and_unknown_prices_say_so():
    nr = from_event({"tokens": 10, "cached_tokens": 0, "uncached_tokens": 10, "usd_if_warm": None,
                     "usd_if_cold": None, "cache_expires_in_s": None})
    assert "nothing cached yet" in pane_text(nr).plain and "? if cold" in pane_text(nr).plain
    forms = status_forms(nr)
    assert forms[-1] is None and [f.plain for f in forms[:2]] == ["next ? warm / ? cold · nothing cached yet",
                                                                  "next ? new"]
    for bad in (None, {}, {"tokens": -1}, {**dict.fromkeys(("tokens", "cached_tokens", "uncached_tokens"), 1),
                                           "usd_if_warm": float("nan"), "usd_if_cold": 1.0,
                                           "cache_expires_in_s": 3.0}):
        assert from_event(bad) is None        # a figure without a price (a log in watch) shows none
