"""The TUI driven with Pilot on the real agent and the offline demo model (no network, no key)."""
from __future__ import annotations

import argparse
import asyncio
import json
import threading
import time
from pathlib import Path

import pytest
from textual.widgets import OptionList

from agent_core import events as ev
from agent_core.pricing.cost import BUCKETS
from app import format as fmt
from app.tui.launch import build_app, run_tui
from app.tui.screens.context_screen import ContextScreen
from app.tui.screens.help import HelpScreen
from app.tui.screens.permission import PermissionScreen
from app.tui.screens.resume import ResumeScreen
from app.tui.screens.transcript_browser import TranscriptBrowser
from app.tui.screens.transcript_viewer import TranscriptViewer
from app.tui.widgets.conversation.answer_record import AssistantRecord
from app.tui.widgets.conversation.compaction_marker import MarkerRecord
from app.tui.widgets.conversation.notice_message import NoticeRecord
from app.tui.widgets.conversation.tool_block import ToolRecord
from app.tui.widgets.conversation.user_message import UserRecord
from compaction.transcript import atomic_write_text
from tests.app.tui_helpers import agent_running, make_app, send

SIZE = (120, 40)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    for i in range(4):
        (ws / f"mod{i}.py").write_text("".join(f"def f{j}(x):\n    return x + {j}  # context notes\n"
                                               for j in range(40)))
    (ws / "README.md").write_text("# demo\n\nWords about ctxtui, context and compaction.\n" * 20)
    return ws



def last(events, cls):
    return [e for e in events if isinstance(e, cls)][-1]


def shown(conv, record) -> str:
    """What a record shows on screen, its wrapped lines read as one line."""
    return " ".join(conv.text_of(record).split())


async def test_prompt_streams_and_panes_follow_the_loop(workspace):
    app, events = make_app(workspace)
    async with app.run_test(size=SIZE) as pilot:
        seen = []
        for prompt in ["explore the python files", "what does mod1 do"]:
            start = len(events)
            await send(app, pilot, prompt)
            turn = events[start:]
            assert isinstance(turn[-1], ev.TurnFinished) and turn[-1].stop_reason == "end_turn"
            # the text streamed into answer records, unchanged
            deltas = "".join(e.text for e in turn if isinstance(e, ev.TextDelta))
            assert deltas
            md = app.conversation.records_of(AssistantRecord)
            assert deltas.strip()[-40:] in "".join(m.text for m in md)
            assert prompt in [u.text for u in app.conversation.records_of(UserRecord)]
            # context pane shows exactly the loop's last context event, numbers and state
            ctx = last(turn, ev.ContextUpdate)
            pane = app.context_pane
            assert pane.context == ctx
            numbers = str(pane.query_one("#ctx-numbers").render())
            assert f"{ctx.tokens:,}" in numbers and f"{ctx.window:,}" in numbers
            assert f"{ctx.percent_left:.0f}%" in numbers
            assert pane.has_class(f"-{ctx.state}")
            assert app.status.state == ctx.state
            seen.append(ctx.tokens)
            # cost table: one row per model and bucket, numbers from the loop's cost event
            cost = last(turn, ev.CostUpdate)
            table = app.cost_pane.query_one("#cost-table")
            assert table.row_count >= 5
            row = table.get_row("demo:cache_read")
            assert row[1].plain == f"{cost.by_model['demo']['cache_read']:,}"
            total = sum(cost.by_model["demo"][b] for b in BUCKETS)
            usd = cost.by_model["demo"]["usd_by_bucket"]                    # dollars per bucket too
            assert row[2].plain == fmt.usd(usd["cache_read"])
            assert table.get_row("total")[1].plain == f"{total:,}"
            # tool calls became collapsible blocks with their results
            calls = [e for e in turn if isinstance(e, ev.ToolCall)]
            blocks = {b.call_id: b for b in app.conversation.records_of(ToolRecord)}
            assert calls and all(c.id in blocks for c in calls)
            assert all(blocks[c.id].state in ("-ok", "-error") for c in calls)
        assert seen[0] != seen[1]
        assert len(app.context_pane.history) == len(app.agent.context_history) > 0


@pytest.mark.slow
async def test_streaming_is_incremental_and_esc_cancels(workspace):
    app, events = make_app(workspace, chunk_delay=0.01)
    async with app.run_test(size=SIZE) as pilot:
        client = app.agent.client
        client.chunk_delay = 0.0
        await send(app, pilot, "explore the python files")   # enough text to scroll
        client.chunk_delay = 0.01
        # Submitted without pilot.press: press() waits for the CPU to go idle, i.e. for the turn.
        app.run_prompt("what does mod1 do")
        partial = None
        while agent_running(app):
            md = app.conversation.current_markdown
            if app.conversation.streaming and md is not None and md.text:
                partial = md.text
                break
            await pilot.pause(0.005)
        assert partial, "no text was visible while the model was still writing"
        # the view followed the bottom so far; once the user scrolls up it stays where they put it
        conv = app.conversation
        assert conv.max_scroll_y == 0 or conv.scroll_y >= conv.max_scroll_y - 1
        conv.scroll_home(animate=False)        # what the Home key does (it releases the anchor)
        deltas = lambda: sum(isinstance(e, ev.TextDelta) for e in events)  # noqa: E731
        seen = deltas()
        while agent_running(app) and deltas() < seen + 5:
            await pilot.pause(0.005)
        assert conv.scroll_y <= 0 < conv.max_scroll_y   # still at the top: not dragged down
        assert agent_running(app), "the turn ended before Esc could be tried"
        await pilot.press("escape")
        while agent_running(app):
            await pilot.pause(0.01)
        await pilot.pause()
        finished = last(events, ev.TurnFinished)
        assert finished.stop_reason == "cancelled"
        notices = [shown(conv, n) for n in conv.records_of(NoticeRecord)]
        assert any("cancelled" in n for n in notices)
        assert not app.busy
        # the next prompt still works (and sending follows the bottom again)
        client.chunk_delay = 0.0
        start = len(events)
        await send(app, pilot, "what does mod2 do")
        assert last(events[start:], ev.TurnFinished).stop_reason == "end_turn"
        assert any(isinstance(e, ev.TextDelta) for e in events[start:])
        assert conv.scroll_y >= conv.max_scroll_y - 1


async def test_small_window_shows_compactions_and_compact_command(workspace):
    app, events = make_app(workspace, window=8_000)
    async with app.run_test(size=SIZE) as pilot:
        # four prompts: on a warm prompt cache microcompact clears only when that pays (issue 13), and
        # since read_file numbers lines unpadded (issue 49) the reads are smaller: the fourth compacts
        for prompt in ("explore the python files", "what does mod1 do", "what does mod2 do", "what does mod3 do"):
            await send(app, pilot, prompt)
        auto = [e for e in events if isinstance(e, ev.Compaction)]
        assert auto, "an 8,000-token window should compact within four prompts"
        markers = app.conversation.records_of(MarkerRecord)
        assert len(markers) == len(auto)
        assert [(m.layer, m.before, m.after) for m in markers] == \
            [(c.layer, c.tokens_before, c.tokens_after) for c in auto]
        breakers = [e for e in events if isinstance(e, ev.BreakerTripped)]
        assert app.timeline.row_count == len(auto) + len(breakers)
        # /compact with a focus
        start = len(events)
        await send(app, pilot, "/compact keep the list of modules")
        manual = [e for e in events[start:] if isinstance(e, ev.Compaction)]
        notices = [e for e in events[start:] if isinstance(e, ev.Notice)]
        assert manual, f"/compact did not compact: {[n.message for n in notices]}"
        if manual:
            assert manual[-1].trigger == "manual"
            assert app.timeline.row_count == len(auto) + len(breakers) + len(manual)
            assert app.conversation.records_of(MarkerRecord)[-1].trigger == "manual"
            assert app.context_pane.context == last(events[start:], ev.ContextUpdate)
        assert last(events[start:], ev.TurnFinished).stop_reason == "compacted"


async def test_permission_modal_denies_then_allows(workspace):
    app, events = make_app(workspace, allow_all=False)
    target = workspace / "notes.txt"
    async with app.run_test(size=SIZE) as pilot:
        asked = await send(app, pilot, "create a file called notes.txt with the module list", answer="d")
        assert any(r.name == "write_file" for r in asked)
        assert not target.exists()
        denied = [e for e in events if isinstance(e, ev.ToolResult) and e.name == "write_file"]
        assert denied and denied[-1].is_error
        assert [r for r in app.conversation.records_of(ToolRecord) if r.state == "-error"]

        asked = await send(app, pilot, "create a file called notes.txt with the module list", answer="a")
        assert any(r.name == "write_file" for r in asked)
        assert target.exists()
        ok = [e for e in events if isinstance(e, ev.ToolResult) and e.name == "write_file"]
        assert not ok[-1].is_error


async def test_cancelling_while_the_modal_asks_closes_it(workspace):
    app, events = make_app(workspace, allow_all=False)
    async with app.run_test(size=SIZE) as pilot:
        app.fill_prompt("create a file called notes.txt with the module list")
        await pilot.press("enter")
        for _ in range(500):
            if isinstance(app.screen, PermissionScreen):
                break
            await pilot.pause(0.01)
        request = app.screen.request
        app.action_cancel_turn()
        while agent_running(app):
            await pilot.pause(0.01)
        await pilot.pause()
        assert request.reply.cancelled() and not isinstance(app.screen, PermissionScreen)
        assert last(events, ev.TurnFinished).stop_reason == "cancelled"
        assert not (workspace / "notes.txt").exists()


@pytest.mark.slow
async def test_slash_completion_palette_and_screens(workspace):
    app, _ = make_app(workspace)
    async with app.run_test(size=SIZE) as pilot:
        prompt = app.prompt_input
        prompt.focus()
        await pilot.press("a", "ctrl+j", "b")           # Ctrl+J: a newline, not a send
        assert prompt.text == "a\nb" and not agent_running(app)
        app.fill_prompt("")
        await pilot.press("slash", "t", "r", "tab")
        assert prompt.text == "/transcripts"
        app.fill_prompt("/co")
        await pilot.press("tab")
        assert prompt.text == "/co" and "/context" in str(prompt.border_subtitle)
        app.fill_prompt("/context")
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ContextScreen)
        await pilot.press("escape")
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        # the command palette offers the same commands
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"transcripts")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, TranscriptBrowser)
        await pilot.press("escape")
        await pilot.pause()
        # /cost maximizes the cost pane; /clear empties the conversation
        app.run_slash("/cost")
        await pilot.pause()
        assert app.screen.maximized is app.cost_pane
        app.run_slash("/cost")
        await send(app, pilot, "explore the python files")
        assert app.conversation.records_of(AssistantRecord)
        app.run_slash("/clear")
        await pilot.pause()
        await pilot.pause()
        assert not app.conversation.records_of(AssistantRecord)
        assert app.context_pane.context == app.agent.context_event()
        # history: Up recalls the last prompt
        prompt.focus()
        app.fill_prompt("")
        await pilot.press("up")
        assert prompt.text == "explore the python files"


@pytest.mark.slow
async def test_resume_restores_conversation_and_panes(workspace):
    app, _ = make_app(workspace)
    async with app.run_test(size=SIZE) as pilot:
        await send(app, pilot, "explore the python files")
        session_id = app.agent.session_id
        n_tools = len(app.conversation.records_of(ToolRecord))

    def check(a) -> None:
        assert a.status.session_id == session_id
        users = [shown(a.conversation, u) for u in a.conversation.records_of(UserRecord)]
        assert any("explore the python files" in u for u in users)
        assert len(a.conversation.records_of(ToolRecord)) == n_tools
        assert a.conversation.records_of(AssistantRecord)
        assert a.context_pane.context == a.agent.context_event()
        assert a.cost_pane.cost.by_model == a.agent.cost_event().by_model

    # ctxtui --resume ID
    app2 = build_app({"model": "demo", "allow": ["all"]}, environ={}, workspace=workspace, resume=session_id,
                     claude_root=None)
    async with app2.run_test(size=SIZE) as pilot:
        await pilot.pause()
        check(app2)

    # /resume from a fresh session: the picker lists the old one; choosing it switches the agent
    app3 = build_app({"model": "demo", "allow": ["all"]}, environ={}, workspace=workspace, claude_root=None)
    async with app3.run_test(size=SIZE) as pilot:
        fresh = app3.agent
        app3.run_slash("/resume")
        await pilot.pause()
        assert isinstance(app3.screen, ResumeScreen)
        options = app3.screen.query_one(OptionList)
        assert session_id in [options.get_option_at_index(i).id for i in range(options.option_count)]
        options.highlighted = [options.get_option_at_index(i).id for i in range(options.option_count)].index(session_id)
        await pilot.press("enter")
        while agent_running(app3):
            await pilot.pause(0.01)
        await pilot.pause()
        assert app3.agent is not fresh
        check(app3)
        # /model switches to a new session on the named model
        app3.run_slash("/model demo")
        while agent_running(app3):
            await pilot.pause(0.01)
        await pilot.pause()
        assert app3.agent.session_id != session_id
        assert not app3.conversation.records_of(UserRecord)


async def test_theme_and_keymap_from_config(workspace):
    app, _ = make_app(workspace, theme="nord", keymap={"app.transcripts": "f9"})
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app.theme == "nord"
        await pilot.press("f9")
        await pilot.pause()
        assert isinstance(app.screen, TranscriptBrowser)


def test_bad_config_exits_2(tmp_path, capsys):
    args = argparse.Namespace(model="demo", context_window=5, workspace=str(tmp_path), resume=None,
                              continue_=False, theme=None)
    assert run_tui(args) == 2
    assert "context" in capsys.readouterr().err.lower()
    args = argparse.Namespace(model="demo", workspace=str(tmp_path), resume=None, continue_=False,
                              theme="no-such-theme")
    assert run_tui(args) == 2
    assert "nord" in capsys.readouterr().err


@pytest.mark.slow
async def test_browser_lists_a_new_transcript_within_a_second(workspace, tmp_path):
    claude = tmp_path / "claude-projects"
    (claude / "-proj").mkdir(parents=True)
    (claude / "-proj" / "s1.jsonl").write_text(json.dumps({"type": "user", "message": {"role": "user",
                                                                                      "content": "hi"}}) + "\n")
    app, _ = make_app(workspace, claude_root=claude)
    async with app.run_test(size=SIZE) as pilot:
        await send(app, pilot, "hello")   # a session's log is written with its first content
        app.run_slash("/transcripts")
        await pilot.pause()
        browser = app.screen
        assert isinstance(browser, TranscriptBrowser)
        table = browser.query_one("#browser-table")
        keys = lambda: {str(k.value) for k in table.rows}  # noqa: E731
        assert str(claude / "-proj" / "s1.jsonl") in keys()
        assert any(k.endswith(f"{app.agent.session_id}.jsonl") for k in keys())  # this session's own log
        while not browser.watching:
            await pilot.pause(0.01)
        await pilot.pause(0.05)
        new = app.sessions_root / app.agent.session_id / "transcripts" / "20260101T000000-manual.jsonl"
        atomic_write_text(new, json.dumps({"uuid": "u", "kind": "message", "timestamp": 0,
                                           "message": {"role": "user", "content": "x"}}) + "\n")
        written = time.monotonic()
        while str(new) not in keys() and time.monotonic() - written < 1.0:
            await pilot.pause(0.01)
        assert str(new) in keys(), "the new transcript was not listed within a second"
        # open it read-only
        table.move_cursor(row=table.get_row_index(str(new)))
        await pilot.press("enter")
        await pilot.pause()
        viewer = app.screen
        assert isinstance(viewer, TranscriptViewer)
        while not viewer.done:
            await pilot.pause(0.01)
        assert len(viewer.records) == 1


@pytest.mark.slow
async def test_a_50mb_log_loads_without_blocking_input(workspace, tmp_path):
    path = tmp_path / "big.jsonl"
    line_user = json.dumps({"type": "user", "timestamp": "2026-01-01T00:00:00Z",
                            "message": {"role": "user", "content": "find the bug " + "x" * 900}})
    line_tool = json.dumps({"type": "assistant", "message": {"role": "assistant", "content": [
        {"type": "tool_use", "id": "t", "name": "Bash", "input": {"command": "echo " + "y" * 900}}]}})
    boundary = json.dumps({"type": "system", "subtype": "compact_boundary",
                           "compactMetadata": {"trigger": "auto", "preTokens": 150000}})
    lines = []
    size = 0
    n = 0
    while size < 50 * 1024 * 1024:
        line = boundary if n % 10_000 == 5_000 else (line_user if n % 2 else line_tool)
        lines.append(line)
        size += len(line) + 1
        n += 1
    path.write_text("\n".join(lines) + "\n")
    del lines
    app, _ = make_app(workspace)
    gate = threading.Event()
    async with app.run_test(size=SIZE) as pilot:
        viewer = TranscriptViewer(path, gate=gate)
        await app.push_screen(viewer)
        while not viewer.records:
            await pilot.pause(0.01)
        # The loader thread is now held mid-file: the screen must still answer keys.
        assert not viewer.done
        await pilot.press("f")
        assert viewer.kind_filter == "user"
        await pilot.press("down", "down")
        lst = viewer.query_one("RecordList")
        assert lst.cursor == 2
        assert not viewer.done
        gate.set()
        while not viewer.done:
            await pilot.pause(0.05)
        assert len(viewer.records) == n
        assert viewer.boundaries == sum(1 for i in range(n) if i % 10_000 == 5_000)
        # jump between compaction boundaries and search
        await pilot.press("f")           # user → assistant
        viewer.kind_filter = "all"
        await pilot.pause()
        lst.cursor = 0
        await pilot.press("right_square_bracket")
        assert viewer.records[lst.rows[lst.cursor]].boundary
        first = lst.cursor
        await pilot.press("right_square_bracket")
        assert lst.cursor > first and viewer.records[lst.rows[lst.cursor]].boundary
        await pilot.press("left_square_bracket")
        assert lst.cursor == first
        await pilot.press("slash", *"echo", "enter")
        assert "echo" in viewer.records[lst.rows[lst.cursor]].text


@pytest.mark.slow
async def test_long_conversations_page_out_old_messages():
    from textual.app import App

    from app.tui.widgets.conversation.container import Conversation, EarlierRecord

    class One(App):
        def compose(self):
            yield Conversation(live_limit=5, page=3)

    app = One()
    async with app.run_test(size=SIZE) as pilot:
        conv = app.query_one(Conversation)
        for i in range(20):
            await conv.add_user(f"prompt {i}")
            await conv.add_tool_call(f"t{i}", "bash", {"command": f"echo {i}"})
            conv.set_tool_result(f"t{i}", str(i), 2, False)
            await pilot.pause()
        live = conv.messages
        assert 5 <= len(live) <= 8
        assert len(conv.archived) + len(live) == 40
        assert isinstance(live[-1], ToolRecord) and live[-1].name == "bash" and live[-1].call_id == "t19"
        # the earlier-messages line is drawn first, above the oldest message drawn
        conv.scroll_home(animate=False)
        await pilot.pause()
        earlier = conv.record_at(0)
        assert isinstance(earlier, EarlierRecord) and earlier.count == len(conv.archived)
        assert f"{len(conv.archived):,} earlier messages" in conv.text_of(earlier)
        assert conv.record_at(len(conv.text_of(earlier).splitlines())) is live[0]
        # paged-out records keep their state and come back a page at a time (a click on the line)
        before = len(conv.archived)
        await pilot.click(Conversation, offset=(2, 0))
        await pilot.pause()
        assert len(conv.archived) == before - 3
        assert conv.record_at(0).count == before - 3
        shown = conv.messages[:3]
        assert [type(r).__name__ for r in shown].count("ToolRecord") >= 1
        tool = next(r for r in shown if isinstance(r, ToolRecord))
        assert tool.result is not None and tool.state == "-ok"
        assert conv.messages[3:] == live
        # while the user reads older messages nothing is paged out under them
        await conv.add_user("new while scrolled up")
        assert len(conv.archived) == before - 3


async def test_model_without_a_key_says_what_to_type_not_which_flag(workspace):
    """/model NAME without ANTHROPIC_API_KEY: the error speaks of /model (what was typed), and the
    demo stays the session."""
    app = build_app({"model": "demo"}, environ={}, workspace=workspace, claude_root=None)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        before = app.agent
        app.run_slash("/model claude-sonnet-4-5")
        while agent_running(app):
            await pilot.pause(0.01)
        await pilot.pause()
        said = [n.message for n in app._notifications]
        assert any("/model claude-sonnet-4-5 needs an API key" in m and "/model demo" in m for m in said), said
        assert not any("--model" in m for m in said), said
        assert app.agent is before


async def test_a_second_esc_right_after_closing_the_cost_pane_does_not_cancel_the_turn(monkeypatch):
    """/cost maximized during a turn: Esc restores it, an Esc pressed again at once (the close can
    take a moment) does not stop the turn; one pressed later does."""
    from app.tui import esc_guard
    from app.tui.app import CtxApp
    from tests.tui_fakes import FakeAgent

    gate = asyncio.Event()
    tui = CtxApp(FakeAgent(gate=gate), clock=lambda: 0.0)
    async with tui.run_test(size=SIZE) as pilot:
        tui.run_prompt("a long turn")
        while not tui.busy:
            await pilot.pause(0.01)
        tui.run_slash("/cost")
        await pilot.pause()
        assert tui.screen.maximized is tui.cost_pane
        # A generous grace: on a loaded CI machine two pilot presses can be more than a second
        # apart, and the test is about the rule, not the default's length.
        monkeypatch.setattr(esc_guard, "ESC_AFTER_CLOSE_S", 600.0)
        await pilot.press("escape")
        await pilot.press("escape")
        await pilot.pause()
        assert tui.screen.maximized is None and tui.busy and not tui.agent._cancelled
        monkeypatch.setattr(esc_guard, "ESC_AFTER_CLOSE_S", 0.0)
        await pilot.press("escape")
        assert tui.agent._cancelled
        gate.set()
