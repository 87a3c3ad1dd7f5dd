"""Watching a summarizing compaction happen (issue 14): through the real SDK and the fake server, a
slowly streamed summary shows in the conversation while it is written — a live block with the
partial text — before the compaction lands; then the block closes and the gauge moves."""
from __future__ import annotations

import pytest

from agent_core import events as ev
from app.tui.screens.inspector import InspectorScreen
from app.tui.widgets.conversation.compaction_marker import MarkerRecord
from app.tui.widgets.conversation.live_compaction import LiveCompactionRecord
from app.widgets.timeline import Timeline
from tests.conversation_keys import enter_on
from tests.agent_helpers import make_workspace
from tests.app.tui_helpers import SUMMARY, fake_app, prompt, wait_idle
from tests.fake_anthropic import FakeAnthropic, is_summary_request, reply

SIZE = (120, 40)


def slow_summary_responder(body: dict):
    """Main calls answer at once; the summary streams in small chunks with a pause between them."""
    if is_summary_request(body):
        return reply(SUMMARY, chunk=12, delay=0.03)
    return reply("noted: " + "details " * 600)



async def compact_and_watch(app, pilot, events) -> tuple[str, bool]:
    """Send /compact and wait for the live block to hold some of the summary: its text then, and
    whether the compaction had already landed (it must not have)."""
    start = len(events)
    app.fill_prompt("/compact")
    await pilot.press("enter")
    for _ in range(500):
        live = app.conversation.live_compaction
        if live is not None and len(live.text) >= 24:
            landed = any(isinstance(e, ev.Compaction) for e in events[start:])
            return live.text, landed
        await pilot.pause(0.01)
    raise AssertionError("no live compaction block with partial text appeared")


@pytest.mark.slow
async def test_a_streamed_summary_shows_live_then_lands(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic(responder=slow_summary_responder) as fake:
        app, events = fake_app(ws, fake.base_url)
        async with app.run_test(size=SIZE) as pilot:
            for text in ("look at the project", "and the utilities"):
                await prompt(app, pilot, text)
            tokens_before = app.context_pane.context.tokens
            partial, landed = await compact_and_watch(app, pilot, events)
            assert not landed, "the live block must show before the compaction lands"
            assert SUMMARY.startswith(partial) and len(partial) < len(SUMMARY)
            conv = app.conversation
            block = conv.live_compaction
            assert isinstance(block, LiveCompactionRecord) and block.expanded and "compacting" in block.heading()
            assert conv.holds(block) and block.running
            drawn = conv.text_of(block)                 # the title and the partial text, on screen
            assert "compacting" in drawn and partial.splitlines()[0] in drawn
            assert not conv.records_of(MarkerRecord)
            await wait_idle(app, pilot)

            assert conv.live_compaction is None
            assert block.text == SUMMARY and not block.expanded and "summary written" in block.heading()
            assert not block.running and conv.holds(block)
            drawn = conv.text_of(block)                 # closed to its title line
            assert "summary written" in drawn and "Primary Request" not in drawn
            comps = [e for e in events if isinstance(e, ev.Compaction)]
            assert comps and comps[-1].trigger == "manual"
            markers = conv.records_of(MarkerRecord)
            assert markers and markers[-1].after == comps[-1].tokens_after and markers[-1].event is comps[-1]
            # the gauge moved when it landed (then count_tokens may refine the figure)
            i = events.index(comps[-1])
            landed_at = next(e for e in events[i:] if isinstance(e, ev.ContextUpdate))
            assert landed_at.tokens == comps[-1].tokens_after
            assert app.context_pane.context.tokens < tokens_before / 2
            kinds = [type(e) for e in events if isinstance(e, (ev.CompactionStarted, ev.CompactionEnded,
                                                                   ev.Compaction))]
            assert kinds[-3:] == [ev.CompactionStarted, ev.CompactionEnded, ev.Compaction]

            # then the inspector, from the marker (the conversation's cursor moved to it, Enter)
            # and from the timeline row
            await enter_on(pilot, conv, markers[-1])
            assert isinstance(app.screen, InspectorScreen) and app.screen.compaction is comps[-1]
            await pilot.press("escape")
            await pilot.pause()
            timeline = app.query_one(Timeline)
            x0, y0 = timeline.region.x + 3, timeline.region.y
            row = len(timeline.events) - 1
            row_y = next(y for y in range(timeline.region.height)
                         if app.screen.get_style_at(x0, y0 + y).meta.get("row") == row)
            await pilot.click(Timeline, offset=(3, row_y))
            await pilot.pause()
            assert isinstance(app.screen, InspectorScreen) and app.screen.compaction is comps[-1]
