"""The compaction inspector (issue 14): opened from a compaction marker (and a timeline row), it
shows what the compaction replaced and with what, per part, with its cost and transcript."""
from __future__ import annotations

import pytest
from textual.widgets import Collapsible, DataTable, Static

from agent_core import events as ev
from agent_core.loop.compaction_parts import compaction_parts
from app.tui.screens.inspector import InspectorScreen, entry_lines, part_rows
from app.tui.widgets.conversation.compaction_marker import MarkerRecord
from app.tui.widgets.conversation.container import Conversation
from app.widgets.timeline import Timeline
from compaction.entry import assistant, user
from app.tui.launch import build_app
from tests.conversation_keys import enter_on
from tests.agent_helpers import MODEL, SECRET, make_workspace, user_dirs
from tests.app.tui_helpers import SUMMARY, fake_app, prompt, wait_idle
from tests.fake_anthropic import FakeAnthropic, is_summary_request, reply

SIZE = (120, 40)


def test_parts_say_what_went_what_came_and_what_stayed():
    a, b, c = user("first question " * 50), assistant("long answer " * 200, response_id="r1"), user("latest")
    summary = user("<summary>the gist</summary>", kind="summary")
    cleared = b.with_content([{"type": "text", "text": "[cleared]"}])
    parts = compaction_parts([a, b, c], [summary, cleared, c], ["microcompact", "autocompact"])
    assert parts["removed"] == [[a.uuid, "user: " + ("first question " * 50).strip()[:120], a.tokens]]
    assert parts["removed_count"] == 1 and parts["removed_tokens"] == a.tokens
    assert parts["cleared"] == [[b.uuid, "assistant: " + ("long answer " * 200).strip()[:120], b.tokens,
                                 cleared.tokens]]
    assert parts["kept"] == [1, c.tokens]
    assert [x["kind"] for x in parts["added"]] == ["summary"] and parts["added_tokens"] == summary.tokens
    rows = part_rows(parts)
    assert rows == [("removed", 1, a.tokens, 0), ("cleared in place", 1, b.tokens, cleared.tokens),
                    ("added: summary", 1, 0, summary.tokens), ("kept verbatim", 1, c.tokens, c.tokens)]
    lines = entry_lines(parts).splitlines()
    assert lines[0].startswith("−") and a.uuid[:8] in lines[0]
    assert lines[1].startswith("~") and b.uuid[:8] in lines[1]


def test_packed_parts_show_the_same_rows_and_lines():
    """An older compaction's parts are kept compressed (agent_core/loop/packed_parts.py)."""
    from agent_core.loop.packed_parts import PackedParts
    a, b, c = user("first question " * 50), assistant("long answer " * 200, response_id="r1"), user("latest")
    summary = user("<summary>the gist</summary>", kind="summary")
    parts = compaction_parts([a, b, c], [summary, c], ["autocompact"])
    packed = PackedParts(parts)
    assert part_rows(packed) == part_rows(parts) and entry_lines(packed) == entry_lines(parts)


def responder(body: dict):
    if is_summary_request(body):
        return reply(SUMMARY)
    return reply("noted: " + "details " * 600)


def screen_text(screen) -> str:
    return "\n".join(str(w.render()) for w in screen.query(Static))


async def marker_by_keys(pilot, conv: Conversation, marker: MarkerRecord) -> None:
    await enter_on(pilot, conv, marker)


async def marker_by_click(pilot, conv: Conversation, marker: MarkerRecord) -> None:
    """Click a row of the conversation where `marker` is drawn (its text, not its margin)."""
    rows = [y for y in range(conv.scrollable_content_region.height) if conv.record_at(y) is marker]
    assert rows, "the marker is not in view"
    await pilot.click(Conversation, offset=(4, rows[len(rows) // 2]))
    await pilot.pause()


@pytest.mark.slow
async def test_inspector_opens_from_the_marker(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic(responder=responder) as fake:
        app, events = fake_app(ws, fake.base_url)
        async with app.run_test(size=SIZE) as pilot:
            for text in ("look at the project", "and the utilities", "/compact"):
                await prompt(app, pilot, text)
            await wait_idle(app, pilot)
            comp = [e for e in events if isinstance(e, ev.Compaction)][-1]
            assert comp.parts is not None and comp.usage
            marker = app.conversation.records_of(MarkerRecord)[-1]
            assert marker.event is comp
            await marker_by_keys(pilot, app.conversation, marker)
            screen = app.screen
            assert isinstance(screen, InspectorScreen) and screen.compaction is comp
            table = screen.query_one("#inspector-parts", DataTable)
            labels = [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
            assert labels[0] == "removed" and "added: summary" in labels and labels[-1] == "kept verbatim"
            # the two answers went (the summary keeps the user's prompts verbatim)
            assert comp.parts["removed_count"] == 2 and str(table.get_row_at(0)[1]) == "2"
            assert comp.parts["kept"][0] == 2
            text = screen_text(screen)
            assert text.count("assistant: noted: details") == 2      # each removed answer is listed
            assert "transcript:" in text and comp.transcript_path and "none" not in text.split("transcript:")[1][:6]
            assert "summary call:" in text and "$" in text  # its own call, priced
            summary = [c for c in screen.query(Collapsible) if str(c.title).startswith("summary")]
            assert summary and not summary[0].collapsed
            body = str(summary[0].query_one(".inspector-text", Static).render())
            assert "1. Primary Request and Intent: the user explored the sample project" in body
            await pilot.press("escape")
            await pilot.pause()
            assert not isinstance(app.screen, InspectorScreen)

            # the same compaction from its timeline row
            timeline = app.query_one(Timeline)
            assert list(timeline.events.values()) == [comp]
            x0, y0 = timeline.region.x + 3, timeline.region.y
            row_y = next(y for y in range(timeline.region.height)
                         if app.screen.get_style_at(x0, y0 + y).meta.get("row") == 0)
            await pilot.click(Timeline, offset=(3, row_y))
            await pilot.pause()
            assert isinstance(app.screen, InspectorScreen) and app.screen.compaction is comp
            await pilot.press("escape")
            await pilot.pause()

            # and from the keyboard: the cursor shows only while the timeline has focus, on the
            # newest row; Enter opens the inspector
            app.prompt_input.focus()
            await pilot.pause()
            assert not timeline.show_cursor
            timeline.focus()
            await pilot.pause()
            assert timeline.show_cursor and timeline.cursor_row == timeline.row_count - 1
            await pilot.press("enter")
            await pilot.pause()
            assert isinstance(app.screen, InspectorScreen) and app.screen.compaction is comp


@pytest.mark.slow
async def test_a_resumed_session_inspects_its_logged_compactions(tmp_path):
    """The parts travel with the logged event: after resume, the boundary's marker and the
    timeline row open the same figures."""
    ws = make_workspace(tmp_path)
    with FakeAnthropic(responder=responder) as fake:
        app, events = fake_app(ws, fake.base_url)
        async with app.run_test(size=SIZE) as pilot:
            for text in ("look at the project", "and the utilities", "/compact"):
                await prompt(app, pilot, text)
            comp = [e for e in events if isinstance(e, ev.Compaction)][-1]
            sid = app.agent.session_id
        env = {**user_dirs(), "ANTHROPIC_API_KEY": SECRET, "ANTHROPIC_BASE_URL": fake.base_url}
        again = build_app({"model": MODEL, "allow": ["all"]}, environ=env, workspace=ws, claude_root=None, resume=sid)
        async with again.run_test(size=SIZE) as pilot:
            await pilot.pause()
            marker = again.conversation.records_of(MarkerRecord)[-1]
            assert marker.event is None          # a boundary rebuilt from the history
            await marker_by_click(pilot, again.conversation, marker)
            shown = again.screen
            assert isinstance(shown, InspectorScreen)
            assert shown.compaction.parts == comp.parts and shown.compaction.usage == comp.usage
            assert list(again.query_one(Timeline).events.values())[-1].parts == comp.parts


def test_the_cost_section_shows_what_the_rule_weighed():
    """Issue 25: a compaction that priced re-reads says so in the inspector."""
    from app.tui.screens.inspector import cost_lines
    c = ev.Compaction(layer="session_memory", trigger="auto", tokens_before=40_000, tokens_after=9_000,
                      cache={"reason": "pays", "cost_usd": 0.01, "saves_per_call_usd": 0.002, "calls_ahead": 12,
                             "reread_usd": 0.0123, "lost_tokens": 9_600})
    lines = cost_lines(c, None)
    # the engine's wording (cache_economics.reread_clause), as the loss report and the preview say it
    assert lines[-1] == "weighed: saves $0.02 over 12 calls against re-reads expected $0.012 (9.6k tokens of results)"
    plain = ev.Compaction(layer="microcompact", trigger="auto", tokens_before=40_000, tokens_after=30_000,
                          cache={"reason": "pays", "cost_usd": 0.01, "saves_per_call_usd": 0.002})
    assert not any(x.startswith("weighed") for x in cost_lines(plain, None))
