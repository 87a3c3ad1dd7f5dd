"""Issue 21, the Textual side: text from outside ctxtui (model output, tool input and output, file
and folder names, any field of a log) reaches the screen with every control character shown
(`agent_core.security.visible_text`) and markup shown literally; it never moves the cursor, erases
a line, sets the window title, becomes a link or crashes the app.

Each test composes the screen as the terminal would get it (`terminal_text`) and checks that no raw
control character is in it and that the hostile text is there, visible."""
from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import pytest
from textual.app import App
from textual.strip import Strip
from textual.widgets import Collapsible

from agent_core import events as ev
from agent_core.config import ConfigError
from agent_core.context_items import ContextItem
from agent_core.replay.report_model import ReplayReport
from app.tui.launch import build_app
from app.replay.app import ReplayApp
from app.tui.screens.context_screen import ContextScreen
from app.tui.screens.inspector import InspectorScreen
from app.tui.screens.permission import PermissionScreen
from app.tui.screens.transcript_browser import TranscriptBrowser
from app.tui.screens.transcript_viewer import TranscriptViewer
from app.tui.screens.trust import TrustApp
from app.tui.app import CtxApp
from app.tui.widgets.conversation.compaction_marker import MarkerRecord
from app.tui.widgets.conversation.container import Conversation
from app.tui.widgets.conversation.notice_message import NoticeRecord
from app.tui.widgets.conversation.summary_block import SummaryRecord
from app.tui.widgets.conversation.tool_block import ToolRecord
from tests.log_helpers import assistant, boundary, usage, user, write_log
from tests.agent_helpers import MODEL, SECRET, user_dirs
from tests.app.hostile import (BAD_MARKUP, CLEAR, CLICK, ERASE, MARKUP, SPOOF, TITLE, assert_clean, flat,
                               raw_controls, terminal_text)
from tests.app.replay_fixture import fixture_report
from tests.fake_anthropic import FakeAnthropic, reply, tool_use
from tests.pilot_until import until
from tests.tui_fakes import FIXED_TIME, FakeAgent, context_event

SIZE = (120, 40)
TALL = (140, 120)      # room for every block of a conversation at once
DEADLINE = 10.0
STARTS = "␛]0;TITLE␇"  # TITLE as it must read


async def expand_all(app, pilot) -> None:
    """Open every collapsible of the screen on top, and every block of the conversation (a tool
    call, thinking, a summary, a live summary) as Enter or a click on it would."""
    for c in app.screen.query(Collapsible):
        c.collapsed = False
    for conv in app.screen_stack[0].query(Conversation):
        for record in conv.messages:
            if getattr(record, "expanded", True) is False:
                conv.activate(record)
    await pilot.pause()
    await pilot.pause()


def drawn_lines(conv: Conversation) -> list[Strip]:
    """Every line the conversation draws, top to bottom, as `render_line` hands it to the screen:
    the view is scrolled over the whole height (then back to the bottom)."""
    lines: dict[int, Strip] = {}
    height, rows = conv.virtual_size.height, conv.scrollable_content_region.height
    for top in range(0, max(1, height), max(1, rows)):
        conv.scroll_to(y=top, animate=False, immediate=True)
        first = int(conv.scroll_y)
        for y in range(rows):
            if first + y < height:
                lines.setdefault(first + y, conv.render_line(y))
    conv.scroll_end(animate=False, immediate=True)
    assert sorted(lines) == list(range(height)), "some lines of the conversation were not read"
    return [lines[k] for k in sorted(lines)]


def assert_drawn_clean(conv: Conversation) -> str:
    """What the conversation draws holds no raw control character in any segment, and no segment
    is a link or an action (`@click` meta): outside text is drawn as text, never as markup.
    Returns the drawn text, line by line."""
    for record in conv.messages:
        assert not raw_controls(conv.text_of(record)), (record, conv.text_of(record))
    lines = drawn_lines(conv)
    for strip in lines:
        for seg in strip:
            assert not raw_controls(seg.text), f"raw control characters drawn: {seg.text!r}"
            style = seg.style
            if style is None:
                continue
            assert not style.link, f"a link drawn: {seg!r}"
            assert not any(str(k).startswith("@") for k in (style.meta or {})), f"an action drawn: {seg!r}"
    return "\n".join(strip.text for strip in lines)


class ModalHost(App[str]):
    """Just a modal on an empty screen (its CSS from styles/, as the real app has it)."""
    CSS_PATH = [Path(__file__).resolve().parents[2] / "styles" / "permission.tcss"]

    def __init__(self, screen) -> None:
        super().__init__()
        self._modal = screen

    def on_mount(self) -> None:
        self.push_screen(self._modal, callback=self.exit)


# ================================================================ 1. the permission modal

def _spoof_responder(body: dict):
    """First call: the spoofing bash command; after its result: a plain answer."""
    last = body["messages"][-1]
    if isinstance(last.get("content"), list) and any(b.get("type") == "tool_result" for b in last["content"]):
        return reply("done")
    return reply("running it", tool_use("bash", {"command": SPOOF}))


async def test_permission_modal_shows_the_spoofed_command_whole_with_a_warning(tmp_path):
    """`echo PWNED > pwned.txt #` + 200 blanks + `\\r\\x1b[2K\\x1b[1Als -la` showed as `ls -la`
    alone; now all of it shows, each control visible, with a warning line above it. Denied, the
    command does not run, and its tool block in the conversation carries no raw escape either."""
    ws = tmp_path / "ws"
    ws.mkdir()
    with FakeAnthropic(responder=_spoof_responder) as fake:
        env = {**user_dirs(), "ANTHROPIC_API_KEY": SECRET, "ANTHROPIC_BASE_URL": fake.base_url}
        app = build_app({"model": MODEL}, environ=env, workspace=ws, claude_root=None)
        async with app.run_test(size=SIZE) as pilot:
            app.fill_prompt("clean up")
            await pilot.press("enter")
            await until(pilot, lambda: isinstance(app.screen, PermissionScreen), "the permission modal")
            await pilot.pause()
            shown = terminal_text(app)
            assert_clean(shown)
            assert "$ echo PWNED > pwned.txt #" in shown
            assert "␍␛[2K␛[1Als -la" in shown                  # the tail, in sight, escapes visible
            warning = flat(shown)
            assert "⚠ this command contains 3 control characters (␍ ␛)" in warning
            assert "a run of 200 blank characters" in warning
            await pilot.press("d")
            await until(pilot, lambda: not app.busy, "the end of the turn")
            await pilot.pause()
            assert not (ws / "pwned.txt").exists()
            conv = app.conversation
            [block] = conv.records_of(ToolRecord)
            title = block.heading().plain
            assert "␍␛[2K␛[1Als -la" in title and not any(ch in title for ch in "\r\x1b")
            drawn = conv.text_of(block)
            assert "␍␛[2K␛[1Als -la" in drawn and not any(ch in drawn for ch in "\r\x1b")
            assert_drawn_clean(conv)
            await expand_all(app, pilot)
            assert block.expanded
            assert_clean(terminal_text(app))
            assert "␍␛[2K␛[1Als -la" in flat(conv.text_of(block))
            assert_drawn_clean(conv)


@pytest.mark.parametrize(("name", "args", "needles", "warned"), [
    ("bash", {"command": ERASE}, ["$ rm -rf build␛[2K␛[1Gls"], "2 control characters (␛)"),
    ("bash", {"command": "ls", "timeout": 5}, ["$ ls", "(timeout 5 s)"], None),
    ("write_file", {"path": f"notes{TITLE}.txt", "content": "line one\rline two\n" + CLEAR},
     [f"notes{STARTS}.txt", "line one␍line two", "␛[2J"], "control characters"),
    ("edit_file", {"path": f"{MARKUP}.py", "old_string": "a = 1\n", "new_string": "a = 2\r\x1b[1Aa = 1\n"},
     [f"a/{MARKUP}.py", "+a = 2␍␛[1Aa = 1"], "control characters"),
    ("grep", {"pattern": CLICK + "\x1b[8m", "path": "src\u202egnp.py"},
     [CLICK, "\\u001b[8m", "src⟨U+202E⟩gnp.py"], "1 bidirectional override"),   # JSON writes ESC so
])
async def test_every_tool_preview_shows_controls_and_markup_as_text(name, args, needles, warned):
    """`\\x1b[2K\\x1b[1G` no longer blanks the command line; paths, contents, diffs and other
    arguments show every control character, and markup in them is text."""
    app = ModalHost(PermissionScreen(ev.PermissionRequest(id="t1", name=name, input=args)))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        shown = terminal_text(app)
        assert_clean(shown)
        for needle in needles:
            assert needle in shown, needle
        assert ("⚠" in shown) == bool(warned)
        if warned:
            assert warned in flat(shown)
        await pilot.press("d")
    assert app.return_value == "deny"


def test_the_warning_names_what_is_hidden():
    from app.tui.screens.permission import call_warning

    assert call_warning("bash", {"command": "ls -la"}) == ""
    words = call_warning("bash", {"command": SPOOF})
    assert words.startswith("⚠ this command contains 3 control characters (␍ ␛); a run of 200 blank characters")
    assert "control" in call_warning("read_file", {"path": "a\x1b[2Jb"})
    # tabs and newlines are fine
    assert call_warning("write_file", {"path": "a.txt", "content": "col\tumn\nline\n"}) == ""


# ================================================================ 2. the conversation's blocks

async def test_conversation_blocks_show_every_outside_text_visibly():
    """Tool titles, arguments and results, thinking, the answer, a live summary and its failure,
    an error, notices (the waiting line updated in place too), a compaction marker, a summary and
    a user prompt: all hold the hostile strings visibly, none raw."""
    app = CtxApp(FakeAgent(), clock=lambda: FIXED_TIME)
    async with app.run_test(size=TALL) as pilot:
        conv = app.conversation
        await conv.add_user(f"my prompt {TITLE}")
        events = [
            ev.ThinkingDelta(text=f"thinking {TITLE}"),
            ev.ToolCall(id="t1", name="bash", input={"command": SPOOF}),
            ev.ToolResult(id="t1", name="bash", preview=f"out {CLEAR}{TITLE} {MARKUP} {CLICK}", size=10),
            ev.ToolCall(id="t2", name=f"tool{TITLE}", input={"path": f"evil{TITLE}.py"}),
            ev.ToolResult(id="t2", name="read_file", preview="\x1b[31mred\x1b[0m\x07", size=10),
            ev.TextDelta(text=f"The answer {CLEAR}"),
            ev.TextDelta(text=f"with {TITLE} and {CLICK}\n"),
            ev.TextDelta(text="and [a link](https://evil.example/x) drawn as text\n"),
            ev.AssistantDone(message_id="m1", model="demo", usage={}, stop_reason="end_turn"),
            ev.CompactionStarted(purpose="compaction", tokens_before=1_000),
            ev.CompactionDelta(text=f"summary {TITLE}"),
            ev.CompactionEnded(ok=False, duration_s=1.0, message=f"{BAD_MARKUP} {TITLE}"),
            ev.Error(kind="server", message=f"upstream said {TITLE} {BAD_MARKUP}"),
            ev.Notice(message=f"notice {CLEAR}"),
            ev.Waiting(message=f"waiting {TITLE}"),
            ev.Waiting(message=f"still waiting {TITLE} {BAD_MARKUP}"),
            ev.Compaction(layer=f"layer{TITLE}", trigger=CLICK, tokens_before=900, tokens_after=100,
                          action=f"did {CLEAR}", transcript_path=f"/tmp/t/evil{TITLE}.jsonl"),
        ]
        for e in events:
            await app.handle_event(e)
        await conv._add(SummaryRecord(f"an old summary {TITLE}"))
        await expand_all(app, pilot)
        shown = terminal_text(app)
        assert_clean(shown)
        drawn = assert_drawn_clean(conv)
        texts = "\n".join(conv.text_of(r) for r in conv.messages)
        for needle in (f"my prompt {STARTS}", f"thinking {STARTS}", "␍␛[2K␛[1Als -la", f"out ␛[2J{STARTS}",
                       MARKUP, CLICK, f"evil{STARTS}.py", f"tool{STARTS}", "␛[31mred␛[0m␇", "The answer ␛[2J",
                       f"summary {STARTS}", BAD_MARKUP, f"upstream said {STARTS}", "notice ␛[2J",
                       f"still waiting {STARTS}", f"layer{STARTS}", "did ␛[2J", f"evil{STARTS}.jsonl",
                       f"an old summary {STARTS}", "https://evil.example/x"):
            assert needle in shown, needle
            assert needle in drawn, needle
            assert needle in texts, needle
        # the waiting line was updated in place: one notice, the latest words
        waits = [r.text for r in conv.records_of(NoticeRecord) if "waiting" in r.text]
        assert waits == [f"still waiting {TITLE} {BAD_MARKUP}"], waits
        # a click on the marker whose trigger reads `[@click=app.quit]` opens the inspector, nothing else
        [marker] = conv.records_of(MarkerRecord)
        rows = [y for y in range(conv.scrollable_content_region.height) if conv.record_at(y) is marker]
        assert rows, "the marker is not in view"
        await pilot.click(Conversation, offset=(4, rows[len(rows) // 2]))
        await pilot.pause()
        assert app.is_running and app._exception is None
        assert isinstance(app.screen, InspectorScreen) and app.screen.compaction is marker.event


# ================================================================ 3. a file name in the workspace

@pytest.mark.parametrize("name", [pytest.param("evil\x1b]0;X\x07.py", marks=pytest.mark.slow),
                                  pytest.param("[bold]x[/b].py", marks=pytest.mark.slow), "[@click=app.quit]q[/].py"])
async def test_a_hostile_file_name_does_not_kill_the_tui(tmp_path, name):
    """`touch $'evil\\e]0;X\\a.py'` then "explore this repository" set the window title and ended
    the app with `generator raised StopIteration` in CollapsibleTitle. Now the name shows, visibly."""
    ws = tmp_path / "ws"
    (ws / name).parent.mkdir(parents=True)
    (ws / name).write_text("x = 1\n")
    (ws / "mod0.py").write_text("def f(x):\n    return x\n")
    app = build_app({"model": "demo", "allow": ["all"]}, environ=user_dirs(), workspace=ws, claude_root=None)
    async with app.run_test(size=TALL) as pilot:
        app.fill_prompt("explore this repository")
        await pilot.press("enter")
        await pilot.pause()
        await until(pilot, lambda: not app.busy, "the end of the turn")
        await expand_all(app, pilot)
        shown = terminal_text(app)
        assert app.is_running and app._exception is None
        assert_clean(shown)
        assert name.replace("\x1b", "␛").replace("\x07", "␇") in shown
        conv = app.conversation
        assert conv.records_of(ToolRecord)
        drawn = assert_drawn_clean(conv)
        assert name.replace("\x1b", "␛").replace("\x07", "␇") in drawn


# ================================================================ 4. the trust dialog

@pytest.mark.parametrize(("folder", "shown_as"), [
    ("ws\x1b]0;T\x07", "ws␛]0;T␇"),
    ("ws[@click=app.quit]q[", "ws[@click=app.quit]q["),
    ("ws[red]x", "ws[red]x"),
])
async def test_the_trust_dialog_shows_the_folder_name_as_text(tmp_path, folder, shown_as):
    ws = tmp_path / folder
    app = TrustApp(ws, ws / ".env", ("ANTHROPIC_BASE_URL",))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        shown = terminal_text(app)
        assert_clean(shown)
        assert shown_as in flat(shown), shown
        await pilot.press("i")
    assert app.return_value == "ignore"


# ================================================================ 5. watch, replay, transcripts

async def test_watch_shows_every_hostile_log_field_as_text(tmp_path):
    """A Claude Code log whose `message.model` and `sessionId` hold `\\x1b[2J`, a title sequence or
    markup, with a hostile prompt, tool call and compaction trigger: the header, panes, timeline and
    activity show them visibly; none is obeyed."""
    from app.watch.app import WatchApp
    from app.watch.header import WatchHeader
    from agent_core.watch.target import WatchTarget

    session = f"s{TITLE}{CLICK}"
    model = f"claude{CLEAR}{TITLE}{MARKUP}"
    path = tmp_path / "log.jsonl"
    tool = assistant("m2", "r2", u=usage(10, 20, write=500), model=model, session=session, block="tool_use")
    tool["message"]["content"] = [{"type": "tool_use", "id": "tu1", "name": f"Bash{TITLE}",
                                   "input": {"command": f"ls {CLEAR}{CLICK}"}}]
    write_log(path, [user(f"explore {TITLE}{MARKUP}", session=session, uuid="u1"),
                     assistant("m1", "r1", u=usage(10, 20, write=1_000), model=model, session=session),
                     tool,
                     boundary(1_500, trigger=f"auto{TITLE}{CLICK}", session=session)])
    app = WatchApp(WatchTarget(path), cwd=tmp_path, live=False)
    async with app.run_test(size=(160, 50)) as pilot:
        scr = app.watch_screen
        await asyncio.wait_for(scr.loaded.wait(), DEADLINE)
        await pilot.pause()
        shown = terminal_text(app)
        assert_clean(shown)
        header = str(scr.query_one(WatchHeader).render())
        assert f"claude␛[2J{STARTS}{MARKUP}" in header and f"s{STARTS}{CLICK}" in header
        assert f"explore {STARTS}{MARKUP}" in shown and f"Bash{STARTS}" in shown and f"ls ␛[2J{CLICK}" in shown
        row = [str(c) for c in scr.timeline.get_row_at(0)]
        assert row[2] == "auto␛]0…"                            # the trigger cell, cut to its width
        assert not any(ch in "".join(row) for ch in "\x1b\x07")
        models = [str(r[0]) for r in (scr.cost_pane.query_one("#cost-table").get_row_at(i)
                                      for i in range(scr.cost_pane.query_one("#cost-table").row_count))]
        assert f"claude␛[2J{STARTS}{MARKUP}" in models


async def test_replay_screen_shows_hostile_log_fields_as_text():
    report = fixture_report()
    s = report["sessions"][0]
    s["path"] = f"/logs/proj/evil{TITLE}{MARKUP}.jsonl"
    s["model"] = f"claude{CLEAR}{CLICK}"
    s["agent_id"] = f"agent{TITLE}"
    layer = f"layer{TITLE}{BAD_MARKUP}"
    s["policies"]["ctxtui"]["compactions"][layer] = 1
    s["policies"]["ctxtui"]["series"]["markers"].append([3, layer])
    report["limits"].append(f"a limit {CLEAR}")
    report["ttl"] = f"5m{TITLE}"
    progress_seen = asyncio.Event()

    def load(options, progress):
        progress(f"reading evil{TITLE}.jsonl", 0.5)
        return ReplayReport.from_json(report)

    app = ReplayApp({"paths": []}, load)
    async with app.run_test(size=(160, 60)) as pilot:
        await asyncio.wait_for(app.replay_screen.done.wait(), DEADLINE)
        await pilot.pause()
        progress_seen.set()
        shown = terminal_text(app)
        assert app.replay_screen.phase == "loaded"
        assert_clean(shown)
        for needle in (f"claude␛[2J{CLICK}", f"agent{STARTS}", f"layer{STARTS}{BAD_MARKUP}", "a limit ␛[2J",
                       f"5m{STARTS}"):
            assert needle in shown, needle
        assert f"evil{STARTS}{MARKUP}" in flat(shown)


async def test_transcript_browser_and_viewer_show_hostile_names_and_records(tmp_path):
    claude = tmp_path / "projects"
    log = claude / "-home-[red]x[@click=app.quit]" / f"evil{TITLE}.jsonl"      # a folder name: no "/" in it
    write_log(log, [user(f"hello {TITLE} {BAD_MARKUP}", session=f"s{CLEAR}", uuid="u1"),
                    assistant("m1", "r1", model=f"m{TITLE}", session="s")])
    app = CtxApp(FakeAgent(), clock=lambda: FIXED_TIME, sessions_root=None, claude_root=claude)
    async with app.run_test(size=SIZE) as pilot:
        app.push_screen(TranscriptBrowser(None, claude))
        await pilot.pause()
        await pilot.pause()
        shown = terminal_text(app)
        assert_clean(shown)
        assert f"evil{STARTS}.jsonl" in shown and "-home-[red]x[@click=app.quit]" in shown
        app.push_screen(TranscriptViewer(log))
        await until(pilot, lambda: app.screen.done, "the loaded log")
        await pilot.pause()
        shown = terminal_text(app)
        assert_clean(shown)
        assert f"evil{STARTS}.jsonl (read-only)" in shown
        assert f"hello {STARTS} {BAD_MARKUP}" in shown          # the list line and the detail below it


# ================================================================ the other screens

@pytest.mark.slow
async def test_inspector_and_context_screen_show_hostile_names_as_text():
    """A compaction's layer, action, re-attached path (with markup that cannot even be parsed) and a
    context item's label (a file name, a command): shown as text, never markup, never obeyed."""
    comp = ev.Compaction(layer=f"layer{TITLE}", trigger=CLICK, tokens_before=900, tokens_after=100,
                         action=f"did {CLEAR}", transcript_path=f"/tmp/evil{TITLE}.jsonl",
                         parts={"removed": [[f"uuid{TITLE}", f"user: {CLEAR}", 5]], "removed_count": 1,
                                "added": [{"kind": f"k{TITLE}", "path": f"{BAD_MARKUP}{TITLE}.py", "tokens": 3,
                                           "text": f"body {CLEAR}"}],
                                "layers": [f"one{TITLE}", "two"], "kept": [0, 0]})
    app = CtxApp(FakeAgent(), clock=lambda: FIXED_TIME)
    async with app.run_test(size=TALL) as pilot:
        app.push_screen(InspectorScreen(comp))
        await pilot.pause()
        await expand_all(app, pilot)
        shown = terminal_text(app)
        assert_clean(shown)
        for needle in (f"layer{STARTS}", CLICK, "did ␛[2J", f"{BAD_MARKUP}{STARTS}.py", "body ␛[2J",
                       f"one{STARTS}", "user: ␛[2J", f"evil{STARTS}.jsonl", f"added: k{STARTS}"):
            assert needle in shown, needle
        app.pop_screen()
        items = [ContextItem(kind=f"tool result{TITLE}", label=f"bash {BAD_MARKUP} {CLEAR}", tokens=500),
                 ContextItem(kind="file read", label=f"{CLICK}.py", tokens=400)]
        app.push_screen(ContextScreen(context_event(60_000), (), items))
        await pilot.pause()
        await pilot.pause()
        shown = terminal_text(app)
        assert_clean(shown)
        for needle in (f"tool result{STARTS}", f"bash {BAD_MARKUP} ␛[2J", f"{CLICK}.py"):
            assert needle in shown, needle


async def test_status_bar_shows_a_hostile_model_and_session_id():
    app = CtxApp(FakeAgent(), clock=lambda: FIXED_TIME)
    async with app.run_test(size=(200, 20)) as pilot:
        app.status.model = f"claude{TITLE}{MARKUP}"
        app.status.session_id = f"sess{CLEAR}"
        await pilot.pause()
        shown = terminal_text(app)
        assert_clean(shown)
        assert f"claude{STARTS}{MARKUP}" in shown and "sess␛[2J" in shown


# ================================================================ plain stderr of the app's commands

def test_set_up_errors_on_stderr_show_controls(monkeypatch, capsys, tmp_path):
    import app.tui.launch as main_module
    from app.cli.watch import main as watch_main

    def refuse(*a, **k):
        raise ConfigError(f"bad folder {TITLE}{CLEAR}")

    monkeypatch.setattr(main_module, "settle_trust", refuse)
    assert main_module.run_tui(None) == 2
    err = capsys.readouterr().err
    assert f"bad folder {STARTS}␛[2J" in err and "\x1b" not in err

    buf = io.StringIO()
    assert watch_main([str(tmp_path / f"gone{TITLE}.jsonl")], stderr=buf, env={}) == 2
    assert STARTS in buf.getvalue() and "\x1b" not in buf.getvalue(), buf.getvalue()


def test_the_fixtures_are_hostile():
    """The strings above would act on a terminal if printed raw (a guard against a helper that
    'fixes' them)."""
    assert "\x1b" in SPOOF and "\r" in SPOOF and "\x1b" in TITLE and "\x07" in TITLE and "\x1b" in ERASE
    assert json.loads(json.dumps(TITLE)) == TITLE
