"""Issue 14, the session side of the TUI: resume restores every pane, /clear is a new session, no
empty logs, a private session folder, the plot's compaction count, cancelled tools, one message
per failure, the timeline's names and newest row. Pilot on the real agent and the demo model."""
from __future__ import annotations

import argparse
import os
import socket
import stat
from pathlib import Path

import pytest
from textual.widgets import Static

from agent_core import events as ev
from agent_core.loop.cancelled import CANCELLED_RESULT
from app.tui.launch import build_app, run_tui
from compaction.entry import Entry, tool_result_block
from app.widgets.context_plot import ContextPlot
from app.tui.widgets.conversation.archive import Archive
from app.tui.widgets.conversation.error_message import ErrorRecord
from app.tui.widgets.conversation.notice_message import NoticeRecord
from app.tui.widgets.conversation.tool_block import CANCELLED_TOOL, ToolRecord
from app.widgets.timeline import Timeline
from app.tui.screens.transcript_viewer import TranscriptViewer
from tests.agent_helpers import SECRET, demo_agent, make_workspace
from tests.tui_fakes import FakeAgent
from app.tui.app import CtxApp

SIZE = (160, 40)   # wide enough for the sidebar at any layout


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = make_workspace(tmp_path)
    for i in range(6):   # files big enough that a small window fills within a few prompts
        body = "".join(f"def step{j}(x):\n    # step {j} of the flow\n    return x + {j}\n\n" for j in range(120))
        (ws / "src" / f"mod{i}.py").write_text(body)
    return ws


class Clock:
    """A clock that moves 40 s each time it is read: model calls look minutes apart, so the
    burn rate has a figure (it is blank under a minute of activity)."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        self.now += 40.0
        return self.now


def demo_app(workspace: Path, window: int = 9_000, **kw) -> CtxApp:
    app = build_app({"model": "demo", "allow": ["all"]}, environ={"CTXTUI_CONTEXT_WINDOW": str(window)},
                    workspace=workspace, claude_root=None, **kw)
    clock = Clock()
    app.agent.clock = clock
    factory = app.agent_factory

    def with_clock(**overrides):   # agents made by /clear, /model and /resume read the same clock
        agent = factory(**overrides)
        agent.clock = clock
        return agent

    app.agent_factory = with_clock
    return app


async def settle(app: CtxApp, pilot) -> None:
    await pilot.pause()
    while any(w.group == "agent" and not w.is_finished for w in app.workers):
        await pilot.pause(0.01)
    await pilot.pause()
    await pilot.pause()


async def send(app: CtxApp, pilot, text: str) -> None:
    app.fill_prompt(text)
    await pilot.press("enter")
    await settle(app, pilot)


def shown(conv, record) -> str:
    """What a record shows on screen, its wrapped lines read as one line."""
    return " ".join(conv.text_of(record).split())


def panes(app: CtxApp) -> dict:
    """What every pane shows, as data: enough to tell a restored screen from a fresh one."""
    plot = app.query_one(ContextPlot)
    tl = app.timeline
    rows = [tuple(str(c) for c in tl.get_row_at(i)) for i in range(tl.row_count)]
    return {
        "session": app.status.session_id,
        "plot_points": tuple(plot.points),
        "plot_caption": str(plot.render()).splitlines()[-1],
        "context": app.context_pane.context,
        "cost_summary": str(app.cost_pane.query_one("#cost-summary", Static).render()),
        "cost": app.cost_pane.cost.by_model,
        "timeline": rows,
        "timeline_at_newest": tl.scroll_y == tl.max_scroll_y,
    }


@pytest.mark.slow
async def test_resume_restores_every_pane(workspace, monkeypatch):
    """Compactions, a cancel and a /clear, quit, resume: each pane shows what it showed."""
    app = demo_app(workspace)
    async with app.run_test(size=SIZE) as pilot:
        for p in ("explore the python files", "what does util do", "how does step work"):
            await send(app, pilot, p)
        first_session = app.agent.session_id
        assert app.agent.compactions, "the small window should compact before the /clear"
        # a cancel: the turn is stopped at once
        app.run_prompt("explain the readme")
        app.action_cancel_turn()
        await settle(app, pilot)
        app.run_slash("/clear")
        await settle(app, pilot)
        assert app.agent.session_id != first_session
        assert app.timeline.row_count == 0
        prompts = iter(("explore the python files", "how does helper work", "describe src", "what does main return",
                        "what does step do", "list the modules", "explain mod3", "how is util used"))
        while len(app.agent.compactions) < 2 and (p := next(prompts, None)):
            await send(app, pilot, p)
        session = app.agent.session_id
        agent = app.agent
        assert len(agent.compactions) >= 2
        before = panes(app)
    assert "burn —" not in before["cost_summary"], before["cost_summary"]
    assert before["plot_points"] and "no turns" not in before["plot_caption"]
    assert f"◆ {len(agent.compactions)} compaction" in before["plot_caption"]

    again = build_app({"model": "demo", "allow": ["all"]}, environ={"CTXTUI_CONTEXT_WINDOW": "9000"},
                      workspace=workspace, claude_root=None, resume=session)
    async with again.run_test(size=SIZE) as pilot:
        await settle(again, pilot)
        after = panes(again)
        # only the compactions of this session (after the /clear), newest row in view
        assert again.timeline.row_count == len(agent.compactions)
    assert after["session"] == before["session"]
    assert after["plot_points"] == before["plot_points"]
    assert after["plot_caption"] == before["plot_caption"]
    assert after["context"] == before["context"]
    assert after["cost"] == before["cost"]
    assert after["cost_summary"] == before["cost_summary"]
    assert [r[1:] for r in after["timeline"]] == [r[1:] for r in before["timeline"]]   # times: resumed as logged
    assert after["timeline_at_newest"] and before["timeline_at_newest"]


@pytest.mark.slow
async def test_plot_counts_compactions_not_updates():
    """Three compactions land before one context update: the caption says 3, not 1."""
    agent = FakeAgent()
    app = CtxApp(agent, clock=lambda: 0.0)
    async with app.run_test(size=SIZE) as pilot:
        for layer in ("microcompact", "collapse", "autocompact"):
            c = ev.Compaction(layer=layer, trigger="auto", tokens_before=7_000, tokens_after=5_000)
            agent.compactions.append(c)
            await app.handle_event(c)
        agent.context_history[:] = [(1, 6_000, False), (2, 5_000, True)]
        await app.handle_event(agent.context_event())
        await pilot.pause()
        caption = str(app.query_one(ContextPlot).render()).splitlines()[-1]
    assert "◆ 3 compactions" in caption, caption


async def test_cancelled_tool_shows_cancelled_not_running():
    app = CtxApp(FakeAgent(), clock=lambda: 0.0)
    async with app.run_test(size=SIZE) as pilot:
        await app.handle_event(ev.ToolCall(id="t1", name="bash", input={"command": "sleep 60"}))
        await app.handle_event(ev.ToolCall(id="t2", name="grep", input={"pattern": "x"}))
        await app.handle_event(ev.ToolResult(id="t2", name="grep", preview="a:1:x", size=5, is_error=False))
        await app.handle_event(ev.TurnFinished(stop_reason="cancelled", turns=1))
        await pilot.pause()
        conv = app.conversation
        blocks = {b.call_id: b for b in conv.records_of(ToolRecord)}
        assert blocks["t1"].state == "-cancelled" and blocks["t1"].mark == "⊘"
        title = shown(conv, blocks["t1"])
        assert "cancelled" in title and "⚙" not in title, title
        assert "cancelled" in blocks["t1"].heading().plain and "⚙" not in blocks["t1"].heading().plain
        assert blocks["t2"].state == "-ok" and not blocks["t2"].cancelled
        assert "cancelled" not in shown(conv, blocks["t2"])


async def test_stream_retry_mentions_a_partial_answer_only_when_one_was_shown():
    app = CtxApp(FakeAgent(), clock=lambda: 0.0)
    async with app.run_test(size=SIZE) as pilot:
        await app.handle_event(ev.StreamRetry("The connection broke", 1, 2))
        await app.handle_event(ev.TextDelta("Half an ans"))
        await app.handle_event(ev.StreamRetry("The connection broke", 2, 2))
        await pilot.pause()
        notes = [n.text for n in app.conversation.records_of(NoticeRecord)][1:]   # after the demo banner
    assert len(notes) == 2
    assert "partial answer" not in notes[0] and "(1 of 2)" in notes[0]
    assert "partial answer above is discarded" in notes[1] and "(2 of 2)" in notes[1]


@pytest.mark.slow
async def test_waiting_is_one_line_updated_in_place():
    app = CtxApp(FakeAgent(), clock=lambda: 0.0)
    async with app.run_test(size=SIZE) as pilot:
        for s in (1, 4, 7):
            await app.handle_event(ev.Waiting(f"Waiting for the API: {s} s", elapsed_s=s))
        await pilot.pause()
        conv = app.conversation
        notes = [n.text for n in conv.records_of(NoticeRecord)][1:]   # after the demo banner
        drawn = [shown(conv, n) for n in conv.records_of(NoticeRecord)][1:]
    assert notes == ["Waiting for the API: 7 s"]
    assert drawn == ["Waiting for the API: 7 s"]     # the line drawn again with the new words


async def test_a_dead_port_says_one_correct_thing(workspace):
    """Nothing listens on the port: one error, which the user can act on; no retry chatter."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    app = build_app({"model": "claude-sonnet-4-6", "api_connect_timeout": 2},
                    environ={"ANTHROPIC_API_KEY": SECRET, "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}"},
                    workspace=workspace, claude_root=None)
    async with app.run_test(size=SIZE) as pilot:
        await send(app, pilot, "hello")
        conv = app.conversation
        errors = [shown(conv, e) for e in conv.records_of(ErrorRecord)]
        notes = [n.text for n in conv.records_of(NoticeRecord)]
    assert len(errors) == 1 and "Could not connect" in errors[0], errors
    assert not [n for n in notes if "retry" in n.lower() or "partial answer" in n], notes
    said = " ".join(errors[0].replace("█", " ").split())
    assert said.count("ANTHROPIC_BASE_URL") == 1 and "send the prompt again" in said, said   # said once


@pytest.mark.slow
async def test_clear_starts_a_new_session_with_its_own_log_and_cost(workspace):
    app = demo_app(workspace, window=30_000)
    async with app.run_test(size=SIZE) as pilot:
        await send(app, pilot, "explore the python files")
        old = app.agent
        assert old.cost_event().total_usd > 0
        app.run_slash("/clear")
        await settle(app, pilot)
        new = app.agent
        assert new is not old and new.session_id != old.session_id
        assert app.status.session_id == new.session_id
        assert not new.entries and not new.cost_event().by_model
        assert app.cost_pane.cost.by_model == {}
        notes = [n.text for n in app.conversation.records_of(NoticeRecord)]
        assert any(new.session_id in n and f"/resume {old.session_id}" in n for n in notes), notes
        await send(app, pilot, "what does util do")
        assert new.session.path.is_file() and new.session.path != old.session.path


async def test_no_log_until_a_session_has_content(workspace):
    """A session that got no prompt, and each `/model X` switched to and left, leave no log in /resume."""
    app = build_app({"model": "demo"}, environ={"ANTHROPIC_API_KEY": SECRET}, workspace=workspace,
                    claude_root=None)
    async with app.run_test(size=SIZE) as pilot:
        for name in ("not-a-model", "claude-no-such-model", "demo"):
            app.run_slash(f"/model {name}")
            await settle(app, pilot)
        app.run_slash("/resume")
        await pilot.pause()
        assert "No other saved sessions" in str(app.screen.query_one(Static).render())
    assert not list(app.sessions_root.glob("*.jsonl")) if app.sessions_root.exists() else True


@pytest.mark.slow
async def test_session_folder_is_private(workspace):
    """The per-session folder (transcripts, tool results) is 0700, even under umask 022."""
    old = os.umask(0o022)
    try:
        app = demo_app(workspace)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "explore the python files")
            await send(app, pilot, "/compact")
            folder = app.sessions_root / app.agent.session_id
            transcripts = list((folder / "transcripts").glob("*.jsonl"))
    finally:
        os.umask(old)
    assert transcripts, "the /compact should have written a transcript"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE((folder / "transcripts").stat().st_mode) == 0o700


@pytest.mark.slow
async def test_timeline_names_layers_in_full_and_shows_the_newest_row():
    app = CtxApp(FakeAgent(), clock=lambda: 0.0)
    async with app.run_test(size=(90, 30)) as pilot:   # narrow: the sidebar is hidden
        layers = ["tool_result_budget", "microcompact", "collapse", "session_memory", "autocompact"] * 5
        for i, layer in enumerate(layers):
            await app.handle_event(ev.Compaction(layer=layer, trigger="auto", tokens_before=9_000 + i,
                                                 tokens_after=4_000))
        await pilot.pause()
        await pilot.resize_terminal(160, 30)                 # wide again: the timeline shows
        for _ in range(3):
            await pilot.pause()
        tl = app.query_one(Timeline)
        shown = [str(tl.get_row_at(i)[1]) for i in range(tl.row_count)]
        assert tl.max_scroll_y > 0 and tl.scroll_y == tl.max_scroll_y
    assert not [s for s in shown if "…" in s], shown
    assert {"result budget", "session memory", "autocompact"} <= set(shown)


@pytest.mark.slow
async def test_transcript_viewer_reads_every_record_kind_and_counts_matches(workspace):
    """A session log's meta, state, history and event records read as words, not JSON; the
    search says which match the cursor is on, of how many."""
    app = demo_app(workspace)
    async with app.run_test(size=SIZE) as pilot:
        await send(app, pilot, "explore the python files")
        await send(app, pilot, "/compact")
        path = app.agent.session.path
        viewer = TranscriptViewer(path)
        app.push_screen(viewer)
        while not viewer.done:
            await pilot.pause(0.01)
        records = viewer.records
        kinds = {r.summary.split(" ")[0] for r in records}
        assert {"session", "state", "model", "call", "result", "turn"} <= kinds, kinds
        raw = [r for r in records if r.summary.lstrip().startswith(("{", "[")) or '{"' in r.summary
               or r.text.lstrip().startswith("{")]
        assert not raw, [r.summary for r in raw][:3]
        n = sum(1 for r in records if "glob" in r.lower)
        assert n >= 2
        await pilot.press("slash")
        for ch in "glob":
            await pilot.press(ch)
        await pilot.press("enter")
        await pilot.pause()
        status = str(viewer.query_one("#viewer-status", Static).render())
        assert f"match 1 of {n}" in status, status
        await pilot.press("n")
        await pilot.pause()
        status = str(viewer.query_one("#viewer-status", Static).render())
        assert f"match 2 of {n}" in status, status


@pytest.mark.parametrize("cli, environ, says, not_says", [
    ({}, {}, "no ANTHROPIC_API_KEY is set", "--model demo"),
    pytest.param({"model": "demo"}, {"ANTHROPIC_API_KEY": SECRET}, "started with --model demo",
                 "set ANTHROPIC_API_KEY", marks=pytest.mark.slow),
    pytest.param({}, {"CTXTUI_MODEL": "demo"}, "CTXTUI_MODEL=demo", "no ANTHROPIC_API_KEY is set",
                 marks=pytest.mark.slow),
])
async def test_demo_banner_says_how_the_demo_was_chosen(workspace, cli, environ, says, not_says):
    app = build_app(cli, environ=environ, workspace=workspace, claude_root=None)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        banner = app.conversation.records_of(NoticeRecord)[0].text
    assert banner.startswith("Demo model, offline") and says in banner and not_says not in banner, banner


def test_the_tui_paces_the_demo_and_tests_and_headless_do_not(workspace, monkeypatch):
    """`ctxtui` (run_tui) streams the demo like a real model; build_app (tests) and build_agent
    (headless) keep it instant, and agents made by /clear, /model, /resume keep the app's pace."""
    started: list[CtxApp] = []
    monkeypatch.setattr(CtxApp, "run", lambda self: started.append(self) or 0)
    args = argparse.Namespace(model="demo", workspace=str(workspace), resume=None, continue_=False, theme=None)
    assert run_tui(args) == 0
    paced = started[0].agent.client
    assert paced.chunk_delay > 0 and paced.latency > 0
    assert started[0].agent_factory(model="demo").client.chunk_delay == paced.chunk_delay
    instant = build_app({"model": "demo"}, environ={}, workspace=workspace, claude_root=None).agent.client
    assert instant.chunk_delay == 0 and instant.latency == 0
    headless = demo_agent(workspace).client
    assert headless.chunk_delay == 0 and headless.latency == 0


def _cancelled_history() -> list:
    """A turn whose bash call was cancelled (the loop's own result for it) next to a grep that
    failed for real, then a few more prompts."""
    return [Entry({"role": "user", "content": [{"type": "text", "text": "look around"}]}),
            Entry({"role": "assistant", "content": [
                {"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "sleep 60"}},
                {"type": "tool_use", "id": "t2", "name": "grep", "input": {"pattern": "x"}}]}),
            Entry({"role": "user", "content": [tool_result_block("t1", CANCELLED_RESULT, is_error=True),
                                               tool_result_block("t2", "grep: bad pattern", is_error=True)]}),
            *[Entry({"role": "user", "content": [{"type": "text", "text": f"prompt {i}"}]}) for i in range(4)]]


def _marks(conv, blocks) -> dict[str, str]:
    """Each call's mark as its title line shows it (after the ▶ / ▼ of the collapsible title)."""
    marks = {}
    for b in blocks:
        symbol, mark = conv.text_of(b).split()[:2]
        assert symbol in ("▶", "▼")
        marks[b.call_id] = mark
    return marks


async def test_cancelled_tool_shows_cancelled_after_resume_and_paging():
    app = CtxApp(FakeAgent(), clock=lambda: 0.0)
    async with app.run_test(size=SIZE) as pilot:
        conv = app.conversation
        await conv.load_entries(_cancelled_history())       # what resume does
        await pilot.pause()
        blocks = conv.records_of(ToolRecord)
        assert _marks(conv, blocks) == {"t1": "⊘", "t2": "✗"}
        assert blocks[0].state == "-cancelled" and blocks[0].cancelled
        assert "Cancelled by the user" not in blocks[0].result_text()
        conv.activate(blocks[0])                             # opened: the result drawn under the title
        assert blocks[0].expanded
        opened = shown(conv, blocks[0])
        assert "Cancelled by the user" not in opened and CANCELLED_TOOL in opened, opened
        conv.activate(blocks[0])
        assert _marks(conv, Archive(blocks)) == {"t1": "⊘", "t2": "✗"}   # paged-out (packed) copies
        # paged out at load, then shown again
        await conv.clear()
        conv.live_limit = 2
        await conv.load_entries(_cancelled_history())
        assert not conv.records_of(ToolRecord)
        assert [r.call_id for r in conv.walk_records() if isinstance(r, ToolRecord)] == ["t1", "t2"]
        while conv.archived:
            conv.show_earlier()
        await pilot.pause()
        assert _marks(conv, conv.records_of(ToolRecord)) == {"t1": "⊘", "t2": "✗"}


@pytest.mark.parametrize("size,short", [pytest.param((120, 40), True, marks=pytest.mark.slow), ((200, 60), False)])
async def test_timeline_columns_fit_the_sidebar(size, short):
    """At 120×40 every column fits the 50-column sidebar (short names, a legend in the tooltip);
    at 200×60 the names are spelled out."""
    app = CtxApp(FakeAgent(), clock=lambda: 0.0)
    async with app.run_test(size=size) as pilot:
        for layer, trigger in (("tool_result_budget", "budget"), ("session_memory", "reactive")):
            await app.handle_event(ev.Compaction(layer=layer, trigger=trigger, tokens_before=144_000,
                                                 tokens_after=2_000, cache={"cost_usd": -0.0111}))
        await pilot.pause()
        tl = app.timeline
        assert tl.virtual_size.width <= tl.scrollable_content_region.width    # every column, padded
        layers = [str(tl.get_row_at(i)[1]) for i in range(tl.row_count)]
    assert layers == (["results", "memory"] if short else ["result budget", "session memory"])
    assert (tl.tooltip is not None) == short


async def test_timeline_rows_added_narrow_show_whole_times_once_wide():
    """Rows added while the pane was narrow (HH:MM) and then shown wide get HH:MM:SS in a column
    wide enough for it: the column grew with the cells, it was not left cropped to 00:00 (a
    snapshot flake when the first layout came before the sidebar's width)."""
    app = CtxApp(FakeAgent(), clock=lambda: 0.0)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.handle_event(ev.Compaction(layer="microcompact", trigger="auto", tokens_before=40_000,
                                             tokens_after=20_000))
        await pilot.pause()
        tl = app.timeline
        assert tl.short and len(str(tl.get_row_at(0)[0])) == 5
        await pilot.resize_terminal(200, 60)
        await pilot.pause()
        await pilot.pause()
        assert not tl.short
        cell = str(tl.get_row_at(0)[0])
        time_width = next(width for key, _, width in tl.columns if key == "time")
        assert len(cell) == 8 and time_width >= 8
        assert cell in tl.render_line(1).text       # drawn whole
