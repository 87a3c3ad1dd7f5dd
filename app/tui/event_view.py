"""The loop's events, each handed to the widget that shows it (attributes down: a pane gets the
figure, the conversation a method call), and a turn's events shown in batches.

Events that come together (a model call's deltas, figures and tool calls arrive in bursts) are
handled in one `batch_update`: the screen is laid out and drawn once for them, not once per event.
A batch ends `BATCH_S` after its first event, or sooner when the loop sends nothing more in that
time (it waits for the model or a tool), so a long burst still shows 20 times a second."""
from __future__ import annotations

import asyncio
import time
from typing import Any, AsyncIterator, Awaitable, Callable, TypeVar

from textual.app import App
from textual.css.query import NoMatches

from agent_core import events as ev

from app.tui.event_feed import NOT_YET, EventFeed
from app.tui.figures import Figures
from app.tui.main_widgets import MainWidgets
from app.tui.screens.permission import PermissionScreen
from app.tui.side_column import SideColumn
from app.tui.widgets.conversation.notice_message import NoticeRecord
from app.tui.widgets.conversation.shell_block import ShellRecord

FILE_TOOLS = frozenset({"write_file", "edit_file"})   # what the file history sees (agent_core/tools/file_history.py)

# Loop events that come within this long of the first of a batch are shown in one frame: a demo
# turn's events (or a real model's tool calls and figures) in 3 frames instead of 5, and what
# comes later is still on screen within 1/20 s (streamed text is drawn at most every 0.1 s anyway).
BATCH_S = 1 / 20

E = TypeVar("E", bound=ev.Event)
Handler = Callable[[Any], Awaitable[object] | None]   # takes the event type it is listed under


class EventView:
    """Shows the loop's events: `handle` one, `show` a turn's stream of them."""

    def __init__(self, app: App[Any], widgets: MainWidgets, side: SideColumn, figures: Figures,
                 clock: Callable[[], float]) -> None:
        self._app = app
        self._widgets = widgets
        self._side = side
        self._figures = figures
        self._clock = clock
        self._streamed = False                         # answer text shown since the model call began
        self._waiting: NoticeRecord | None = None     # the "Waiting for the API" line, updated in place
        self._shell: ShellRecord | None = None        # the `!command` running, until its output lands
        self._handlers: dict[type[ev.Event], Handler] = {}
        w = widgets        # the conversation is looked up per event (MainWidgets holds it)
        self._on(ev.TextDelta, self._text)
        self._on(ev.ThinkingDelta, lambda e: w.conversation.append_thinking(e.text))
        self._on(ev.ToolCall, lambda e: w.conversation.add_tool_call(e.id, e.name, e.input))
        self._on(ev.ToolResult, self._tool_result)
        self._on(ev.AssistantDone, self._answer_done)
        self._on(ev.ContextUpdate, figures.context)
        self._on(ev.CostUpdate, figures.cost)
        self._on(ev.Compaction, self._compaction)
        self._on(ev.CompactionStarted, lambda e: w.conversation.start_compaction(e))
        self._on(ev.CompactionDelta, lambda e: w.conversation.append_compaction(e.text))
        self._on(ev.CompactionEnded, lambda e: w.conversation.end_compaction(e))
        self._on(ev.BreakerTripped, self._breaker)
        self._on(ev.Error, lambda e: w.conversation.add_error(e))
        self._on(ev.Notice, lambda e: w.conversation.add_notice(e.message))
        self._on(ev.FileMentioned, lambda e: w.conversation.add_mention(e.path, e.lines, e.total_lines))
        self._on(ev.CacheMiss, lambda e: w.conversation.add_notice(f"Cache: {e.text}."))
        self._on(ev.StreamRetry, self._stream_retry)
        self._on(ev.Waiting, self._wait)
        self._on(ev.PermissionRequest, self._permission)
        self._on(ev.TurnFinished, self._turn_finished)
        self._on(ev.ShellRan, self._shell_ran)
        self._on(ev.TurnStarted, lambda e: None)   # the prompt is already shown; the app marks itself busy

    def _on(self, kind: type[E], handler: Callable[[E], Awaitable[object] | None]) -> None:
        self._handlers[kind] = handler

    # ----- a turn -------------------------------------------------------------------------------
    async def show(self, stream: AsyncIterator[ev.Event]) -> None:
        """Show the loop's events as they come, in batches (module docstring); at the end the
        answer is closed and the turn's final figures shown now, not after the panes' interval."""
        self._streamed = False
        feed = EventFeed(stream)
        try:
            e = await feed.next()
            while e is not None:
                with self._app.batch_update():
                    started = time.monotonic()
                    while isinstance(e, ev.Event):
                        await self.handle(e)
                        left = started + BATCH_S - time.monotonic()
                        # the next event in this batch if it comes soon; the batch's time is up: the next
                        e = await feed.next(timeout=left) if left > 0 else NOT_YET
                if e is NOT_YET:
                    e = await feed.next()
        finally:
            feed.close()
            try:
                await self._widgets.conversation.end_text()
                if self._figures.scheduled:
                    self._figures.flush()
            except NoMatches:  # the app is closing and the widgets are gone
                pass

    async def start_shell(self, command: str) -> None:
        """`!command`: its block, which the ShellRan event fills in."""
        self._shell = await self._widgets.conversation.add_shell(command)

    async def handle(self, e: ev.Event) -> None:
        """One loop event → the widget that shows it: the handler of its type, or of the nearest
        type it derives from (a Waiting is shown as the Notice it is). Other events are not shown."""
        handler = ev.handler_for(self._handlers, e)
        if not isinstance(e, ev.Waiting):
            self._waiting = None    # the next wait gets a line of its own, below what came since
        shown = handler(e) if handler is not None else None
        if shown is not None:
            await shown

    # ----- the handlers -------------------------------------------------------------------------
    async def _compaction(self, e: ev.Compaction) -> None:
        await self._widgets.conversation.add_compaction(e)
        at = self._clock()
        self._side.later(lambda: self._widgets.timeline.add_compaction(e, at))

    async def _breaker(self, e: ev.BreakerTripped) -> None:
        at = self._clock()
        self._side.later(lambda: self._widgets.timeline.add_breaker(e, at))
        await self._widgets.conversation.add_notice(f"Auto-compaction stopped by the {e.breaker} breaker: {e.reason}")

    async def _text(self, e: ev.TextDelta) -> None:
        self._streamed = True
        await self._widgets.conversation.append_text(e.text)

    async def _answer_done(self, e: ev.AssistantDone) -> None:
        self._streamed = False
        await self._widgets.conversation.end_text()

    async def _wait(self, e: ev.Waiting) -> None:
        """One line per wait, updated as the seconds pass (not a new line every few seconds)."""
        conv = self._widgets.conversation
        if self._waiting is not None and conv.holds(self._waiting):
            conv.set_notice(self._waiting, e.message)
            return
        self._waiting = await conv.add_notice(e.message)

    async def _stream_retry(self, e: ev.StreamRetry) -> None:
        conv = self._widgets.conversation
        await conv.end_text()
        partial = " The partial answer above is discarded." if self._streamed else ""
        self._streamed = False
        await conv.add_notice(f"{e.message}.{partial} Sending it again ({e.attempt} of {e.of}).")

    async def _turn_finished(self, e: ev.TurnFinished) -> None:
        conv = self._widgets.conversation
        await conv.end_text()
        if e.stop_reason == "cancelled":
            conv.cancel_running_tools()    # still running when the turn was cancelled
            await conv.add_notice("Turn cancelled. What was done so far is kept; send the next prompt.")

    def _tool_result(self, e: ev.ToolResult) -> None:
        self._widgets.conversation.set_tool_result(e.id, e.preview, e.size, e.is_error)
        if e.name in FILE_TOOLS and not e.is_error:
            self._figures.refresh_changes()

    def _shell_ran(self, e: ev.ShellRan) -> None:
        record, self._shell = self._shell, None
        if record is not None:
            self._widgets.conversation.set_shell(record, None if e.cancelled else e.output, e.is_error)

    def _permission(self, request: ev.PermissionRequest) -> None:
        """The modal answers on the request (allow / always / deny), which the loop awaits. A turn
        cancelled while asking cancels the request, and the modal closes with it."""
        screen = PermissionScreen(request)
        app = self._app

        def closed(answer: str | None) -> None:
            request.answer(answer or "deny")

        def abandoned(reply: asyncio.Future[str]) -> None:
            if reply.cancelled() and app.screen is screen:
                screen.dismiss("deny")

        app.push_screen(screen, callback=closed)
        request.reply.add_done_callback(abandoned)
