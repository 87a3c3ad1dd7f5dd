"""Issue 23: a thousand-turn session stays as fast and as small as a ten-turn one. Paged-out
messages are records, not widgets; scrolling back builds them again with their content; a burst of
loop events (one model call's deltas and figures) is shown once per frame, not once per event; a
tool block is few widgets. The figures themselves are bench/tui.py's."""
from __future__ import annotations

import gc

import pytest

from textual.app import App
from textual.screen import Screen
from textual.widget import Widget

from agent_core import events as ev
from compaction.entry import Entry

from app.tui.app import CtxApp
from app.tui.widgets.conversation.assistant_message import AssistantMessage
from app.tui.widgets.conversation.container import Conversation
from app.tui.widgets.conversation.earlier_messages import EarlierMessages
from app.tui.widgets.conversation.tool_block import ToolBlock
from app.tui.widgets.conversation.user_message import UserMessage
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


@pytest.mark.slow
async def test_paged_out_messages_are_records_and_widgets_stay_bounded():
    """3,000 messages (a resumed 1,000-turn history, then live appends) leave a bounded number of
    widget objects: what is paged out is data. (Before: unmounted copies, four objects a tool block.)"""
    app = One()
    async with app.run_test(size=SIZE) as pilot:
        conv = app.query_one(Conversation)
        baseline = live_widgets()
        assert await conv.load_entries(history(1_000)) == 3_000
        for i in range(100):
            await conv.add_user(f"live prompt {i}")
            await conv.add_tool_call(f"live{i}", "grep", {"pattern": f"p{i}"})
            conv.set_tool_result(f"live{i}", f"hit {i}", 5, False)
        await pilot.pause()
        held = len(conv.archived) + len(conv.messages)
        assert held == 3_200
        assert not any(isinstance(r, Widget) for r in conv.archived)
        first, _, tool = conv.archived[:3]
        assert first.text == "prompt 0" and tool.result == ("out 0", 5, False)
        assert all(type(r).__dict__.get("__slots__") for r in conv.archived[:3]), "small records"
        mounted = len(list(conv.walk_children()))
        assert mounted <= 400
        assert live_widgets() - baseline <= mounted + 50, "widgets outlive the messages they showed"


@pytest.mark.slow
async def test_scroll_back_builds_the_earliest_messages_with_their_content():
    app = One(live_limit=5, page=4)
    async with app.run_test(size=SIZE) as pilot:
        conv = app.query_one(Conversation)
        await conv.load_entries(history(10))
        for i in range(10):   # calls still running when they are paged out…
            await conv.add_tool_call(f"run{i}", "bash", {"command": f"sleep {i}"})
        assert not any(isinstance(w, ToolBlock) and w.call_id == "run0" for w in conv.messages)
        conv.set_tool_result("run0", "done 0", 6, True)        # …this one does, paged out by now
        conv.scroll_home(animate=False)
        await pilot.pause()
        while conv.archived:
            await pilot.click(EarlierMessages)
            await pilot.pause()
        first, answer, tool = conv.messages[:3]
        assert isinstance(first, UserMessage) and first.text == "prompt 0"
        assert isinstance(answer, AssistantMessage) and answer.source == "answer 0: **bold** and `code`"
        assert isinstance(tool, ToolBlock) and tool.result == ("out 0", 5, False) and tool.has_class("-ok")
        tool.collapsed = False
        await pilot.pause()
        assert "out 0" in str(tool.result_view.render()) and tool.result_view.display
        run0 = next(w for w in conv.messages if isinstance(w, ToolBlock) and w.call_id == "run0")
        assert run0.result == ("done 0", 6, True) and run0.has_class("-error")
        # a result arriving after the block was shown again updates the block
        conv.set_tool_result("run9", "done 9", 6, False)
        run9 = next(w for w in conv.messages if isinstance(w, ToolBlock) and w.call_id == "run9")
        assert run9.has_class("-ok") and "✓" in str(run9.title)
        assert not conv.query(EarlierMessages)


async def test_a_collapsed_tool_block_is_two_widgets_and_expands_to_its_body():
    app = One()
    async with app.run_test(size=SIZE) as pilot:
        conv = app.query_one(Conversation)
        block = await conv.add_tool_call("t1", "bash", {"command": "ls -la"})
        conv.set_tool_result("t1", "file-a\nfile-b", 14, False)
        await pilot.pause()
        assert len(list(block.walk_children(with_self=True))) <= 3
        block.collapsed = False
        await pilot.pause()
        await pilot.pause()
        assert block.args_view.is_attached and block.args_view.display
        assert "ls -la" in str(block.args_view.render()) and "file-b" in str(block.result_view.render())
        assert block.result_view.region.height >= 2
        block.collapsed = True
        await pilot.pause()
        assert not block.result_view.display or block.result_view.region.height == 0


class Counting:
    """Counts full layouts of the screen and renders of the panes while patched in."""

    def __init__(self, monkeypatch) -> None:
        self.layouts = self.context = self.cost = self.appends = 0
        layout, ctx, cost, append = (Screen._refresh_layout, ContextPane._render_context, CostPane._render_cost,
                                     AssistantMessage.append)

        def count_layout(screen, *a, **k):
            self.layouts += 1
            return layout(screen, *a, **k)

        def count_ctx(pane, *a):
            self.context += 1
            return ctx(pane, *a)

        def count_cost(pane, *a):
            self.cost += 1
            return cost(pane, *a)

        def count_append(md, *a):
            self.appends += 1
            return append(md, *a)

        monkeypatch.setattr(Screen, "_refresh_layout", count_layout)
        monkeypatch.setattr(ContextPane, "_render_context", count_ctx)
        monkeypatch.setattr(CostPane, "_render_cost", count_cost)
        monkeypatch.setattr(AssistantMessage, "append", count_append)

    def reset(self) -> None:
        self.layouts = self.context = self.cost = self.appends = 0


async def test_one_model_call_is_shown_once_per_frame_not_once_per_event(monkeypatch):
    """200 text deltas with a context and a cost figure after every tenth, as one model call
    sends them (back to back): a handful of layouts and document appends, the panes set a few
    times — not 200 appends, 20 renders of each pane."""
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
        await pilot.pause()
        md = app.conversation.messages[-1]
        assert isinstance(md, AssistantMessage) and md.source == "".join(words)
        assert n.appends <= 5, f"{n.appends} document appends for 200 deltas"
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
    the answer's last block is re-parsed on each write, and a list is one block, so writing once
    per frame rebuilt the same list dozens of times a turn. Writes come at most every
    TEXT_FLUSH_S, however many frames the deltas span."""
    import asyncio
    import time

    from app.tui.widgets.conversation.container import TEXT_FLUSH_S

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
        await pilot.pause()
        md = app.conversation.messages[-1]
        assert isinstance(md, AssistantMessage) and md.source == "".join(words)
        allowed = elapsed / TEXT_FLUSH_S + 2
        assert n.appends <= allowed, f"{n.appends} writes for {len(words)} deltas in {elapsed:.2f} s"
        assert n.appends < len(words) / 2


@pytest.mark.slow
async def test_the_side_tables_keep_bounded_render_caches_over_a_long_session():
    """DataTable keys its render caches by an update counter and sizes them for 10,000 cells: the
    entries of every earlier update stay until the cache is full. The timeline (a row per
    compaction) and the cost pane (new figures after each model call) hold a few screens' worth."""
    from textual.widgets import DataTable

    from app.widgets.timeline import Timeline

    app = CtxApp(FakeAgent(), clock=lambda: 0.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        timeline = app.screen.query_one(Timeline)
        costs = app.cost_pane.query_one(DataTable)
        for i in range(150):
            timeline.add_compaction(ev.Compaction(layer="microcompact", trigger="auto", tokens_before=15_000 + i,
                                                  tokens_after=12_000, duration_s=0.01, action="cleared"))
            await app.handle_event(cost_event())
            await pilot.pause()
        assert timeline.row_count == 150
        for table in (timeline, costs):
            rows, cells = len(table._row_render_cache), len(table._cell_render_cache)
            assert rows <= 256 and cells <= 2_048, (type(table).__name__, rows, cells)
