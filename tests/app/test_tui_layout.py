"""The main screen at any size (issue 14): answers that open with an XML-style tag, the sidebar that
collapses on narrow terminals and toggles with a key, the status line's figures, and where focus
goes when a screen or the maximized cost pane closes. Pilot tests on the scripted FakeAgent."""
from __future__ import annotations

import pytest

from app.tui.screens.permission import PermissionScreen
from app.tui.app import CtxApp
from app.tui.widgets.conversation.answer_record import AssistantRecord
from app.tui.widgets.conversation.container import Conversation
from app.tui.widgets.status import StatusBar
from compaction.entry import Entry
from tests.pilot_until import until
from tests.tui_fakes import FIXED_TIME, FakeAgent, context_event

TAGGED = ("<summary>\nThe user asked for a map of the engine.\n</summary>\n\n"
          "<analysis>\nThree layers run before the summary.\n</analysis>\n\nSee **compaction/**.")
SHOWN = ("<summary>", "The user asked for a map of the engine.", "</summary>", "<analysis>",
         "Three layers run before the summary.", "See compaction/.")


def make_app(**kw) -> CtxApp:
    return CtxApp(FakeAgent(**kw), clock=lambda: FIXED_TIME)


def shown_text(conv: Conversation, md: AssistantRecord) -> str:
    """What the conversation draws for the answer, as plain text."""
    assert conv.holds(md), "the answer is not drawn"
    return conv.text_of(md)


def assert_all_shown(conv: Conversation, md: AssistantRecord) -> None:
    text = shown_text(conv, md)
    missing = [s for s in SHOWN if s not in text]
    assert not missing, f"not shown: {missing!r} in {text!r}"


# ----- item 1: an answer that begins with a tag ------------------------------------------------------
async def test_an_answer_opening_with_a_tag_is_shown_while_streamed_and_after():
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        conv = app.conversation
        await conv.add_user("summarise")
        for i in range(0, 60, 7):   # the first chunks hold only the opening tag's line
            await conv.append_text(TAGGED[i:i + 7])
        md = conv.current_markdown
        # the stream already shows it, before the end (drawn by the flush timer, on its own time)
        await until(pilot, lambda: "<summary>" in shown_text(conv, md), "the opening tag drawn while streaming")
        await conv.append_text(TAGGED[63:])
        await conv.end_text()
        await pilot.pause()
        assert md.text == TAGGED
        assert_all_shown(conv, md)
        # The record kept when a long conversation pages it out draws the same way once shown again.
        conv.live_limit, conv.page = 1, 1
        for i in range(2):
            await conv.add_notice(f"notice {i}")
        await pilot.pause()
        assert not conv.holds(md) and md in list(conv.archived)
        while not conv.records_of(AssistantRecord):
            assert conv.show_earlier() == 1
        await pilot.pause()
        (copy,) = conv.records_of(AssistantRecord)
        assert copy is not md and copy == md      # unpacked from the archive
        assert_all_shown(conv, copy)
        assert shown_text(conv, copy) == conv.text_of(md)


async def test_a_resumed_answer_opening_with_a_tag_is_shown():
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await app.conversation.load_entries([
            Entry({"role": "user", "content": [{"type": "text", "text": "summarise"}]}),
            Entry({"role": "assistant", "content": [{"type": "text", "text": TAGGED}]}),
        ])
        await pilot.pause()
        (md,) = app.conversation.records_of(AssistantRecord)
        assert_all_shown(app.conversation, md)


@pytest.mark.parametrize("text", ["<b>bold?</b> plain", "a < b and c > d", "<!-- note -->\nafter"])
async def test_other_angle_brackets_stay_literal(text):
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await app.conversation.append_text(text)
        await app.conversation.end_text()
        await pilot.pause()
        (md,) = app.conversation.records_of(AssistantRecord)
        shown = shown_text(app.conversation, md)
        assert " ".join(shown.split()) == " ".join(text.split())


# ----- item 2: the layout at any size; the sidebar key ---------------------------------------------
async def shown_widgets(app: CtxApp, pilot) -> dict:
    await pilot.pause()
    side = app.query_one("#side")
    return {"side": side.display and side.region.width > 0, "side_width": side.region.width,
            "conversation": app.conversation.region.width}


@pytest.mark.parametrize("size", [(80, 24), (100, 30), (119, 40)])
async def test_a_narrow_terminal_collapses_the_sidebar(size):
    app = make_app()
    async with app.run_test(size=size) as pilot:
        seen = await shown_widgets(app, pilot)
        assert not seen["side"]
        assert seen["conversation"] == size[0]
        assert app.prompt_input.region.width == size[0]


@pytest.mark.parametrize("size", [(120, 40), (160, 50), (200, 60)])
async def test_a_wide_terminal_shows_the_sidebar_and_leaves_the_conversation_70_columns(size):
    app = make_app()
    async with app.run_test(size=size) as pilot:
        seen = await shown_widgets(app, pilot)
        assert seen["side"]
        assert seen["conversation"] >= 70
        assert seen["conversation"] + seen["side_width"] == size[0]


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_the_prompt_placeholder_is_not_cut(size):
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        assert len(app.prompt_input.placeholder) <= app.prompt_input.content_size.width

async def test_a_large_terminal_gives_the_panes_more_room():
    sizes = {}
    for size in [(120, 40), (200, 60)]:
        app = make_app()
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            sizes[size] = {name: app.query_one(sel).region for name, sel in
                           [("side", "#side"), ("plot", "#ctx-plot"), ("timeline", "#timeline"),
                            ("cost", "#cost-pane"), ("gauge", "#ctx-gauge")]}
    small, big = sizes[(120, 40)], sizes[(200, 60)]
    assert big["side"].width > small["side"].width
    assert big["gauge"].width > small["gauge"].width
    assert big["plot"].height > small["plot"].height
    assert big["timeline"].height > small["timeline"].height
    assert big["cost"].height >= small["cost"].height
    # The side column is filled: its panes reach its bottom.
    assert big["timeline"].bottom == big["side"].bottom


async def test_a_short_terminal_keeps_every_pane_visible_when_the_sidebar_is_shown():
    app = make_app()
    async with app.run_test(size=(130, 24)) as pilot:
        await pilot.pause()
        assert app.query_one("#side").display
        for sel in ("#context-pane", "#cost-pane", "#timeline"):
            assert app.query_one(sel).region.height >= 5, sel
        assert app.context_pane.region.height + app.cost_pane.region.height + app.timeline.region.height \
            <= app.query_one("#side").region.height


@pytest.mark.parametrize("size", [(80, 24), (200, 60)])
async def test_the_sidebar_key_toggles_it_at_any_size(size):
    app = make_app()
    async with app.run_test(size=size) as pilot:
        before = (await shown_widgets(app, pilot))["side"]
        await pilot.press("f2")
        after = await shown_widgets(app, pilot)
        assert after["side"] is not before
        if after["side"]:
            assert after["conversation"] + after["side_width"] == size[0]
        else:
            assert after["conversation"] == size[0]
        assert app.focused is app.prompt_input   # typing still goes to the prompt
        await pilot.press("ctrl+b")
        assert (await shown_widgets(app, pilot))["side"] is before


async def test_hiding_the_sidebar_while_a_pane_has_focus_gives_the_prompt_the_focus():
    """F2 with the timeline focused: the panes go, the prompt gets the focus, what is typed lands
    in it, and Enter does not open a block of the conversation."""
    app = make_app()
    async with app.run_test(size=(200, 60)) as pilot:
        await app.conversation.add_tool_call("t1", "grep", {"pattern": "x"})
        await pilot.pause()
        app.timeline.focus()
        await pilot.pause()
        assert app.focused is app.timeline
        await pilot.press("f2")
        await pilot.pause()
        assert not (await shown_widgets(app, pilot))["side"]
        assert app.focused is app.prompt_input
        for ch in "hi":
            await pilot.press(ch)
        assert app.prompt_input.text == "hi"
        (tool,) = [r for r in app.conversation.messages if getattr(r, "call_id", None) == "t1"]
        await pilot.press("enter")
        assert not tool.expanded


async def test_the_sidebar_key_is_in_the_footer_and_the_help():
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        keys = {b.binding.key: b.binding.action for b in app.active_bindings.values()}
        assert keys.get("f2") == "toggle_sidebar"
        await pilot.press("f1")
        await pilot.pause()
        text = " ".join(str(s.render()) for s in app.screen.query("#help-dialog Static"))
        assert "F2" in text and "side panes" in text


# ----- item 3: the status line carries the essentials ----------------------------------------------
def status_text(app: CtxApp) -> str:
    return str(app.status.render())


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (200, 60)])
async def test_the_status_line_shows_state_tokens_left_and_dollars_after_a_turn(size):
    app = make_app(window=20_000, growth=14_000)
    async with app.run_test(size=size) as pilot:
        app.fill_prompt("explain the engine")
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        c = app.agent.context_event()
        assert c.state == "warning"    # 15,000 of 20,000, the threshold at 16,700
        text = status_text(app)
        assert len(text) <= size[0] - 2
        assert "WARNING" in text
        assert "15k / 20k tokens" in text or "15k/20k" in text
        assert f"{c.percent_left:.0f}% left" in text
        assert "$0.01" in text   # the scripted agent's dollars for one turn
        if size[0] >= 120:
            assert "left until auto-compact" in text and "demo — offline" in text


def test_the_status_line_drops_the_least_needed_parts_first():
    bar = StatusBar()
    bar.model, bar.offline, bar.session_id = "claude-sonnet-4-5", False, "20260101T000000-abcdef"
    bar.context = context_event(150_000)
    bar.cost_usd = 0.4607
    full = str(bar.fit(200))
    for part in ("WARNING", "150k / 200k tokens", "10% left until auto-compact", "$0.46 session",
                 "model claude-sonnet-4-5", "session 20260101T000000-abcdef"):
        assert part in full
    bar.busy = True
    assert "running — Esc cancels" in str(bar.fit(200))
    previous = None
    for width in range(200, 19, -1):
        text = str(bar.fit(width))
        assert text.startswith("● WARNING")
        if width >= 45:
            assert len(text) <= width, (width, text)
            assert "150k" in text and "10% left" in text and "$0.46" in text, (width, text)
        if previous is not None:
            assert len(text) <= len(previous)
        previous = text
    # At 80 columns the essentials and the running turn fit; the session id goes first.
    eighty = str(bar.fit(78))
    assert "session 2026" not in eighty and "running" in eighty and "10% left" in eighty


def test_the_status_line_before_any_figure_and_with_an_unknown_price():
    bar = StatusBar()
    bar.model = "claude-x"
    assert str(bar.fit(120)).startswith("● OK")
    assert "? session" in str(bar.fit(120))   # no price data: "?" rather than a wrong $0


# ----- item 5: focus comes back to the prompt ------------------------------------------------------
async def test_after_cost_then_esc_the_prompt_has_the_focus_and_takes_typing():
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        app.fill_prompt("/cost")
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen.maximized is app.cost_pane
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen.maximized is None
        assert app.focused is app.prompt_input
        await pilot.press("h", "i")
        assert app.prompt_input.text == "hi"
        # /cost a second time (the toggle) restores it too
        app.fill_prompt("/cost")
        await pilot.press("enter")
        await pilot.pause()
        app.run_slash("/cost")
        await pilot.pause()
        assert app.screen.maximized is None
        assert app.focused is app.prompt_input


@pytest.mark.parametrize("command", ["/help", pytest.param("/context", marks=pytest.mark.slow),
                                     pytest.param("/transcripts", marks=pytest.mark.slow),
                                     pytest.param("/resume", marks=pytest.mark.slow),
                                     pytest.param("/cost", marks=pytest.mark.slow)])
async def test_every_screen_gives_the_focus_back_to_the_prompt(command, tmp_path):
    app = CtxApp(FakeAgent(), clock=lambda: FIXED_TIME, sessions_root=tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        for cmd in (command, "/cost", command):   # also after a /cost round trip
            app.fill_prompt(cmd)
            await pilot.press("enter")
            await pilot.pause()
            await pilot.press("escape")
            await pilot.pause()
            assert len(app.screen_stack) == 1 and app.screen.maximized is None
            assert app.focused is app.prompt_input, (cmd, app.focused)
        await pilot.press("ctrl+p")   # the command palette too
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        assert app.focused is app.prompt_input


async def test_the_permission_modal_gives_the_focus_back_to_the_prompt():
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        app.fill_prompt("please write a file")
        await pilot.press("enter")
        for _ in range(100):
            await pilot.pause(0.01)
            if isinstance(app.screen, PermissionScreen):
                break
        assert isinstance(app.screen, PermissionScreen)
        await pilot.press("a")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.focused is app.prompt_input


async def test_a_tall_plot_draws_its_bars_over_every_row():
    app = make_app()
    async with app.run_test(size=(200, 60)) as pilot:
        await pilot.pause()     # the side column mounts a frame after the rest (side_panes.py)
        app.context_pane.context = context_event(100_000)
        app.context_pane.history = ((1, 100_000, False), (2, 200_000, True), (3, 50_000, False))
        await pilot.pause()
        plot = app.query_one("#ctx-plot")
        lines = str(plot.render()).split("\n")
        rows = plot.size.height - 2
        assert rows >= 4
        bars = [line[:3] for line in lines[:rows]]
        assert [b[1] for b in bars] == ["█"] * rows                       # the full window: every row
        assert [b[0] for b in bars] == [" "] * (rows // 2) + ["█"] * (rows - rows // 2)   # half of it
        assert sum(b[2] == "█" for b in bars) == rows // 4                  # a quarter
        assert lines[rows][:3] == "·◆·" and "3 updates" in lines[rows + 1]


async def test_cost_opens_full_screen_even_with_the_sidebar_folded():
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert not app.query_one("#side").display
        app.run_slash("/cost")
        await pilot.pause()
        assert app.cost_pane.region.width == 80 and app.cost_pane.region.height >= 20
        await pilot.press("escape")
        await pilot.pause()
        assert not app.query_one("#side").display and app.focused is app.prompt_input
