"""Issue 23: a thousand-turn session stays as fast and as small as a ten-turn one. The conversation
is one widget whatever it holds: each message is a record that draws itself into lines, so appending
a block draws that block and lays nothing out; paged-out messages are compressed records, not
widgets, and scrolling back draws them again with their content; a burst of loop events (one model
call's deltas and figures) is drawn a few times a second, not once per event. The figures themselves
are bench/tui.py's."""
from __future__ import annotations

import asyncio
import gc
import time

import pytest

from textual._compositor import Compositor
from textual.app import App
from textual.screen import Screen
from textual.widget import Widget

from agent_core import events as ev
from compaction.entry import Entry

from app import format as fmt
from app.tui.app import CtxApp
from app.tui.figures import PANES_INTERVAL_S
from app.tui.widgets.conversation.answer_record import AssistantRecord
from app.tui.widgets.conversation.container import Conversation, EarlierRecord
from app.tui.widgets.conversation.tool_block import ToolRecord
from app.tui.widgets.conversation.user_message import UserRecord
from app.tui.widgets.footer import AppFooter
from app.widgets.context_pane import ContextPane
from app.widgets.cost_pane import CostPane
from tests.tui_fakes import FakeAgent, context_event, cost_event

SIZE = (120, 40)


class One(App):
    def __init__(self, **kw) -> None:
        super().__init__()
        self.kw = kw

    def compose(self):
        yield Conversation(**self.kw)


def history(turns: int) -> list[Entry]:
    """`turns` rounds of prompt, answer with a tool call, its result: 3 messages each."""
    out = []
    for i in range(turns):
        out += [Entry({"role": "user", "content": [{"type": "text", "text": f"prompt {i}"}]}),
                Entry({"role": "assistant", "content": [
                    {"type": "text", "text": f"answer {i}: **bold** and `code`"},
                    {"type": "tool_use", "id": f"t{i}", "name": "bash", "input": {"command": f"echo {i}"}}]}),
                Entry({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}",
                                                    "content": f"out {i}"}]})]
    return out


def live_widgets() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, Widget))


def screen_widgets(app: App) -> int:
    return len(list(app.screen.walk_children(with_self=True)))


class Draws:
    """Counts the records drawn (by kind, and which) and the full layouts of the screen while
    patched in."""

    KINDS = (UserRecord, ToolRecord, AssistantRecord, EarlierRecord)

    def __init__(self, monkeypatch) -> None:
        self.drawn: list = []
        self.layouts = 0
        for kind in self.KINDS:
            monkeypatch.setattr(kind, "draw", self._counting(kind.draw))
        layout = Compositor.reflow      # what arranges every widget of the screen (Screen._refresh_layout)

        def count_layout(compositor, *a, **k):
            self.layouts += 1
            return layout(compositor, *a, **k)

        monkeypatch.setattr(Compositor, "reflow", count_layout)

    def _counting(self, draw):
        def counting(record, *a, **k):
            self.drawn.append(record)
            return draw(record, *a, **k)
        return counting

    def messages(self) -> list:
        """The message records drawn (the earlier-messages line left out)."""
        return [r for r in self.drawn if not isinstance(r, EarlierRecord)]

    def reset(self) -> None:
        self.drawn.clear()
        self.layouts = 0


@pytest.mark.slow
async def test_paged_out_messages_are_records_and_the_conversation_is_one_widget():
    """3,200 messages (a resumed 1,000-turn history, then live appends): what is paged out is data,
    compressed, and the conversation is one widget: no widget is made for a message, drawn or not.
    (Before: a widget per message, unmounted copies of the paged-out ones.)"""
    app = One()
    async with app.run_test(size=SIZE) as pilot:
        conv = app.query_one(Conversation)
        await pilot.pause()
        baseline, on_screen = live_widgets(), screen_widgets(app)
        assert await conv.load_entries(history(1_000)) == 3_000
        for i in range(100):
            await conv.add_user(f"live prompt {i}")
            await conv.add_tool_call(f"live{i}", "grep", {"pattern": f"p{i}"})
            conv.set_tool_result(f"live{i}", f"hit {i}", 5, False)
        await pilot.pause()
        held = len(conv.archived) + len(conv.messages)
        assert held == 3_200 and len(list(conv.walk_records())) == 3_200
        assert len(conv.messages) <= conv.live_limit + conv.page      # the rest is paged out
        assert not any(isinstance(r, Widget) for r in conv.walk_records())
        first, _, tool = conv.archived[:3]
        assert first.text == "prompt 0" and tool.result == ("out 0", 5, False)
        assert all(type(r).__dict__.get("__slots__") for r in conv.archived[:3]), "small records"
        assert conv.archived.nbytes < 3_000 * 400, "paged-out records are kept compressed"
        last = conv.messages[-1]
        assert isinstance(last, ToolRecord) and last.call_id == "live99" and last.result == ("hit 99", 5, False)
        assert len(list(conv.walk_children())) == 0, "a widget per message"
        assert screen_widgets(app) == on_screen
        assert live_widgets() - baseline <= 10, "widgets made for the messages"


async def test_five_thousand_messages_are_one_widget_on_a_full_screen():
    """The whole app holding 5,001 messages has the widgets it had with none."""
    app = CtxApp(FakeAgent(), clock=lambda: 0.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        conv = app.conversation
        on_screen, before = screen_widgets(app), len(list(conv.walk_records()))   # a notice or so
        assert await conv.load_entries(history(1_667)) == 5_001
        await pilot.pause()
        assert len(list(conv.walk_records())) == before + 5_001 and conv.messages
        assert len(list(conv.walk_children())) == 0
        assert screen_widgets(app) == on_screen


async def test_appending_a_block_draws_that_block_and_lays_nothing_out(monkeypatch):
    """With thousands of messages held (and the view following the bottom, paging out as it goes),
    a prompt, a tool call and its result draw those records once each and never arrange the
    screen: the cost of a block does not grow with the session."""
    app = One()
    async with app.run_test(size=SIZE) as pilot:
        conv = app.query_one(Conversation)
        await conv.load_entries(history(1_000))
        await pilot.pause()
        n = Draws(monkeypatch)
        pages = 0
        for i in range(60):           # enough to page out a few times (live_limit 60, page 20)
            n.reset()
            user = await conv.add_user(f"live prompt {i}")
            tool = await conv.add_tool_call(f"live{i}", "grep", {"pattern": f"p{i}"})
            conv.set_tool_result(f"live{i}", f"hit {i}", 5, False)
            await pilot.pause()
            drawn = n.messages()
            assert len(drawn) == 3 and drawn[0] is user and drawn[1] is tool and drawn[2] is tool, drawn
            assert len(n.drawn) - len(drawn) <= 1, "the earlier-messages line is drawn once when a page goes"
            pages += len(n.drawn) - len(drawn)
            assert n.layouts == 0, f"{n.layouts} layouts of the screen for one block"
        assert len(conv.archived) + len(conv.messages) == 3_120
        assert len(conv.archived) >= 3_120 - conv.live_limit - conv.page      # pages went out meanwhile
        assert conv.scroll_y == conv.max_scroll_y > 0         # still following the bottom
        assert pages >= 3, "paged out while appending"
        assert conv.text_of(tool).strip() == "▶ ✓ grep  p59  · 5 B"      # drawn with its result


async def running_calls_paged_out(app: App) -> Conversation:
    """A resumed history of 30 messages, then ten tool calls still running when paged out."""
    conv = app.query_one(Conversation)
    await conv.load_entries(history(10))
    for i in range(10):
        await conv.add_tool_call(f"run{i}", "bash", {"command": f"sleep {i}"})
    assert not any(isinstance(r, ToolRecord) and r.call_id == "run0" for r in conv.messages)
    return conv


async def test_paging_out_keeps_the_records_and_a_late_result_lands_on_its_block():
    """Paged out while still running, a tool call keeps getting its result (it is the same record),
    and paging keeps every record in order."""
    app = One(live_limit=5, page=4)
    async with app.run_test(size=SIZE) as pilot:
        conv = await running_calls_paged_out(app)
        await pilot.pause()
        assert 5 <= len(conv.messages) <= 9 and len(conv.archived) + len(conv.messages) == 40
        conv.set_tool_result("run0", "done 0", 6, True)        # …this one does, paged out by now
        (run0,) = [r for r in conv.archived if isinstance(r, ToolRecord) and r.call_id == "run0"]
        assert run0.result == ("done 0", 6, True) and run0.state == "-error"
        order = [(type(r).__name__, getattr(r, "call_id", None) or getattr(r, "text", None))
                 for r in conv.walk_records()]
        assert order[:3] == [("UserRecord", "prompt 0"), ("AssistantRecord", "answer 0: **bold** and `code`"),
                             ("ToolRecord", "t0")]
        assert order[-10:] == [("ToolRecord", f"run{i}") for i in range(10)]


@pytest.mark.slow
async def test_scroll_back_draws_the_earliest_messages_with_their_content():
    app = One(live_limit=5, page=4)
    async with app.run_test(size=SIZE) as pilot:
        conv = await running_calls_paged_out(app)
        conv.set_tool_result("run0", "done 0", 6, True)        # …this one does, paged out by now
        everything = list(conv.walk_records())
        conv.scroll_home(animate=False)
        await pilot.pause()
        clicks = 0
        while conv.archived:
            assert isinstance(conv.record_at(0), EarlierRecord)
            shown = len(conv.messages)
            await pilot.click(Conversation, offset=(2, 0))      # the "earlier messages" line
            await pilot.pause()
            assert len(conv.messages) == shown + min(4, len(everything) - shown)   # a page at a time
            clicks += 1
        assert clicks == 9        # 31 paged out, 4 a page
        assert conv.messages == everything, "shown again in order, equal"
        first, answer, tool = conv.messages[:3]
        assert isinstance(first, UserRecord) and first.text == "prompt 0"
        assert isinstance(answer, AssistantRecord) and answer.text == "answer 0: **bold** and `code`"
        assert "answer 0: bold and code" in conv.text_of(answer)
        assert isinstance(tool, ToolRecord) and tool.result == ("out 0", 5, False) and tool.state == "-ok"
        conv.activate(tool)        # opened: its input and result are drawn under the title
        await pilot.pause()
        assert tool.expanded and "out 0" in conv.text_of(tool) and "echo 0" in conv.text_of(tool)
        run0 = next(r for r in conv.messages if isinstance(r, ToolRecord) and r.call_id == "run0")
        assert run0.result == ("done 0", 6, True) and run0.state == "-error" and "✗" in conv.text_of(run0)
        # a result arriving after the block was shown again updates the block
        conv.set_tool_result("run9", "done 9", 6, False)
        run9 = next(r for r in conv.messages if isinstance(r, ToolRecord) and r.call_id == "run9")
        assert run9.state == "-ok" and "✓" in run9.heading().plain and conv.text_of(run9).lstrip().startswith("▶ ✓")
        assert not conv.records_of(EarlierRecord)


async def test_a_tool_block_is_one_title_line_and_opens_to_its_body():
    app = One()
    async with app.run_test(size=SIZE) as pilot:
        conv = app.query_one(Conversation)
        block = await conv.add_tool_call("t1", "bash", {"command": "ls -la"})
        conv.set_tool_result("t1", "file-a\nfile-b", 14, False)
        await pilot.pause()
        assert not list(conv.walk_children())
        closed = conv.text_of(block)
        assert closed.count("\n") == 0 and closed.lstrip().startswith("▶ ✓ bash") and "ls -la" in closed
        assert "file-a" not in closed
        conv.focus()
        conv.cursor = len(conv.messages) - 1
        await pilot.press("enter")            # what Enter on the block does
        await pilot.pause()
        assert block.expanded
        opened = [line.strip() for line in conv.text_of(block).split("\n")]
        assert opened[0].startswith("▼ ✓ bash")
        assert any("ls -la" in line for line in opened[1:]) and "file-a" in opened and "file-b" in opened
        assert len(opened) >= 4
        await pilot.press("enter")
        await pilot.pause()
        assert not block.expanded and conv.text_of(block) == closed


class Counting:
    """Counts full layouts of the screen, renders of the panes and draws of answers while patched in."""

    def __init__(self, monkeypatch) -> None:
        self.layouts = self.context = self.cost = self.draws = 0
        layout, ctx, cost, draw = (Screen._refresh_layout, ContextPane._render_context, CostPane._render_cost,
                                   AssistantRecord.draw)

        def count_layout(screen, *a, **k):
            self.layouts += 1
            return layout(screen, *a, **k)

        def count_ctx(pane, *a):
            self.context += 1
            return ctx(pane, *a)

        def count_cost(pane, *a):
            self.cost += 1
            return cost(pane, *a)

        def count_draw(record, *a):
            self.draws += 1
            return draw(record, *a)

        monkeypatch.setattr(Screen, "_refresh_layout", count_layout)
        monkeypatch.setattr(ContextPane, "_render_context", count_ctx)
        monkeypatch.setattr(CostPane, "_render_cost", count_cost)
        monkeypatch.setattr(AssistantRecord, "draw", count_draw)

    def reset(self) -> None:
        self.layouts = self.context = self.cost = self.draws = 0


async def test_one_model_call_is_shown_once_per_frame_not_once_per_event(monkeypatch):
    """200 text deltas with a context and a cost figure after every tenth, as one model call
    sends them (back to back): a handful of layouts and answer draws, the panes set a few
    times — not 200 draws, 20 renders of each pane."""
    app = CtxApp(FakeAgent(), clock=lambda: 0.0)
    async with app.run_test(size=SIZE) as pilot:
        await app.conversation.add_user("go")
        await pilot.pause()
        n = Counting(monkeypatch)
        words = [f"word{i} " if i % 25 else f"\n\nparagraph {i // 25}: " for i in range(200)]
        for i, w in enumerate(words):
            await app.handle_event(ev.TextDelta(text=w))
            if i % 10 == 9:
                await app.handle_event(context_event(10_000 + i * 10))
                await app.handle_event(cost_event())
        await app.handle_event(ev.AssistantDone(message_id="m1", model="demo", usage={}, stop_reason="end_turn"))
        await pilot.pause(PANES_INTERVAL_S + 0.05)     # the panes take figures at most this often
        md = app.conversation.messages[-1]
        assert isinstance(md, AssistantRecord) and md.text == "".join(words)
        assert "paragraph 7: word176" in app.conversation.text_of(md)
        assert 1 <= n.draws <= 5, f"{n.draws} answer draws for 200 deltas"
        assert n.layouts <= 8, f"{n.layouts} layouts for one model call"
        assert n.context <= 3 and n.cost <= 3, (n.context, n.cost)
        assert app.context_pane.context.tokens == 10_000 + 199 * 10     # the latest figure is the one shown


@pytest.mark.slow
async def test_the_footer_leaves_no_dead_keys_behind_turn_after_turn():
    """Each turn greys Esc in and out, and the footer recomposes its keys: the removed keys must
    not stay alive (Textual kept them bound to the footer, fourteen a turn)."""
    from textual.widgets._footer import FooterKey

    def footer_keys() -> int:      # in the whole process: other tests' apps may have left some
        gc.collect()
        return sum(1 for o in gc.get_objects() if isinstance(o, FooterKey))

    app = CtxApp(FakeAgent(), clock=lambda: 0.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        footer = app.screen.query_one(AppFooter)
        before = footer_keys()
        for _ in range(10):
            app.busy = True
            footer.refresh(recompose=True)     # what a change of the shown keys does
            await pilot.pause()
            app.busy = False
            await pilot.pause()
        shown = len(app.screen.query(FooterKey))
        grown = footer_keys() - before
        assert shown and grown <= shown, f"{grown} more footer keys alive after ten turns ({shown} shown)"


async def test_a_turn_greys_esc_in_place_without_rebuilding_the_footer():
    """A turn starting and ending only greys Esc in and out, and focus moves change nothing the
    footer shows: the same key widgets stay (a recompose is a dozen widgets styled and laid out,
    six times a turn before)."""
    from textual.widgets._footer import FooterKey

    app = CtxApp(FakeAgent(), clock=lambda: 0.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        keys = list(app.screen.query(FooterKey))
        esc = next(k for k in keys if k.action == "cancel_turn")
        assert esc.has_class("-disabled")
        for _ in range(3):
            app.busy = True
            await pilot.pause()
            assert not esc.has_class("-disabled")
            app.conversation.focus()
            await pilot.pause()
            app.prompt_input.focus()
            app.busy = False
            await pilot.pause()
            assert esc.has_class("-disabled")
        assert list(app.screen.query(FooterKey)) == keys


@pytest.mark.slow
async def test_deltas_spread_over_many_frames_are_written_a_few_times_a_second(monkeypatch):
    """A model that streams a delta every frame (the demo does, and so does a fast real model):
    the answer is rendered again whole on each draw, so drawing once per frame rendered the same
    list dozens of times a turn. Draws come at most every TEXT_FLUSH_S, however many frames the
    deltas span."""
    import asyncio
    import time

    from app.tui.widgets.conversation.gathered_text import TEXT_FLUSH_S

    app = CtxApp(FakeAgent(), clock=lambda: 0.0)
    async with app.run_test(size=SIZE) as pilot:
        await app.conversation.add_user("go")
        await pilot.pause()
        n = Counting(monkeypatch)
        words = ["- item one\n"] + [f"- item {i}, more words\n" for i in range(2, 40)]
        started = time.monotonic()
        for w in words:
            await app.handle_event(ev.TextDelta(text=w))
            await pilot.pause()            # a frame goes by between deltas
            await asyncio.sleep(0.005)
        elapsed = time.monotonic() - started
        await app.handle_event(ev.AssistantDone(message_id="m1", model="demo", usage={}, stop_reason="end_turn"))
        await pilot.pause(PANES_INTERVAL_S + 0.05)     # the panes take figures at most this often
        md = app.conversation.messages[-1]
        assert isinstance(md, AssistantRecord) and md.text == "".join(words)
        assert "item 39, more words" in app.conversation.text_of(md)
        allowed = elapsed / TEXT_FLUSH_S + 2
        assert 1 <= n.draws <= allowed, f"{n.draws} draws for {len(words)} deltas in {elapsed:.2f} s"
        assert n.draws < len(words) / 2


@pytest.mark.slow
async def test_the_side_tables_keep_bounded_render_caches_over_a_long_session():
    """Both side tables draw with the line API (FigureTable) and keep a bounded number of drawn
    lines: the timeline (a row per compaction, DataTable's caches once kept every earlier update's
    cells) at most DRAWN_ROWS however many rows it holds; the cost pane's table (new figures after
    each model call) one drawn line per row it shows."""
    from dataclasses import replace

    from app.widgets.figure_table import DRAWN_ROWS, FigureTable
    from app.widgets.timeline import Timeline

    app = CtxApp(FakeAgent(), clock=lambda: 0.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        timeline = app.screen.query_one(Timeline)
        costs = app.cost_pane.query_one(FigureTable)
        for i in range(DRAWN_ROWS + 44):
            timeline.add_compaction(ev.Compaction(layer="microcompact", trigger="auto", tokens_before=15_000 + i,
                                                  tokens_after=12_000, duration_s=0.01, action="cleared"))
            await app.handle_event(replace(cost_event(), total_usd=0.46 + i / 1_000))   # the total row changes
            await pilot.pause()
        assert timeline.row_count == DRAWN_ROWS + 44
        for y in range(0, timeline.row_count, 4):      # scrolled back through every row
            timeline.scroll_to(y=y, animate=False, immediate=True)
            for line in range(timeline.size.height):
                timeline.render_line(line)
        assert len(timeline._drawn) == DRAWN_ROWS
        while app.figures.scheduled:          # the last figures reach the panes
            await pilot.pause(0.05)
        assert costs.row_count > 5 and len(costs._drawn) <= costs.row_count
        last = 0.46 + (DRAWN_ROWS + 43) / 1_000
        assert app.cost_pane.cost.total_usd == last
        assert fmt.usd(last) in costs._row_strip("total").text


async def test_the_panes_take_figures_at_most_four_times_a_second(monkeypatch):
    """Figures that keep coming (a turn of many model calls) reach the panes at most every
    PANES_INTERVAL_S, but keep reaching them while they come, and the latest is the one shown."""
    app = CtxApp(FakeAgent(), clock=lambda: 0.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(PANES_INTERVAL_S)
        flushes: list[float] = []
        flush = app.figures.flush

        def counting() -> None:
            flushes.append(time.monotonic())
            flush()

        monkeypatch.setattr(app.figures, "flush", counting)
        started = time.monotonic()
        for i in range(40):                      # 40 figures over about a second
            await app.handle_event(context_event(10_000 + i))
            await asyncio.sleep(0.025)
        spent = time.monotonic() - started
        await pilot.pause(PANES_INTERVAL_S + 0.05)
        assert app.context_pane.context.tokens == 10_000 + 39
        assert len(flushes) <= spent / PANES_INTERVAL_S + 2, f"{len(flushes)} pane updates in {spent:.2f}s"
        assert len(flushes) >= 3, "the panes must follow the figures while they come, not only at the end"
        gaps = [b - a for a, b in zip(flushes, flushes[1:])]
        assert min(gaps) >= PANES_INTERVAL_S * 0.9, gaps


async def test_a_compaction_row_scrolls_the_timeline_without_laying_the_screen_out(monkeypatch):
    """The timeline's height is its pane's (CSS), never its rows': a row per compaction changes
    only its scroll range. A new row used to arrange the whole screen once per compaction; now
    the screen is laid out only when the scrollbar first appears, and the newest row stays shown."""
    from app.widgets.timeline import Timeline

    app = CtxApp(FakeAgent(), clock=lambda: 0.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        timeline = app.screen.query_one(Timeline)
        n = Draws(monkeypatch)
        for i in range(40):
            timeline.add_compaction(ev.Compaction(layer="microcompact", trigger="auto",
                                                  tokens_before=15_000 + 1_000 * i, tokens_after=12_000,
                                                  duration_s=0.01, action="cleared"))
            await pilot.pause()
        assert timeline.row_count == 40
        assert n.layouts <= 2, f"{n.layouts} layouts of the screen for 40 compaction rows"
        assert timeline.show_vertical_scrollbar and timeline.vertical_scrollbar.window_virtual_size == \
            timeline.virtual_size.height
        assert timeline.scroll_y == timeline.max_scroll_y > 0       # the newest row in view
        shown = "\n".join(timeline.render_line(y).text for y in range(timeline.scrollable_content_region.height))
        assert "42k" in shown and "3.0k" not in shown       # the last row freed 42k, the first 3.0k
