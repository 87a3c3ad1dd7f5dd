"""The agent loop: one user turn at a time, compaction before every model call (the whole
path of a prompt: docs/architecture.md, "The flow of one prompt").

`run(prompt)` drives a turn in its own task and yields its events from a queue, so `cancel()`
can stop a stream or a tool batch at any point and still leave a valid, logged history.
The agent runs the turn; its collaborators return data: `Counter` (counting.py) learns how the
server counts, `Figures` (figures.py) makes what front-ends show, `SessionWriter` writes the log,
`run_batch` (tool_batch.py) runs a tool batch, server_engine.py reads the server's edits, and
compaction_events.py turns the pipeline's reports into events.
"""
from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable, Coroutine

from compaction import Entry, Pipeline, clock
from compaction.accounting.budget import ContextBudget
from compaction.next_request import NextRequest

from agent_core import events as ev
from agent_core.loop.cache_watch import CacheWatch
from agent_core.loop import threshold
from agent_core.loop.compaction_preview import CompactionPreview, PreviewError, preview_compaction, summary_size
from agent_core.loop.counting import Counter
from agent_core.loop.figures import Figures
from agent_core.loop.memory_files import Memory
from agent_core.loop.request_head import RequestHead
from agent_core.loop.rewind import RewindPoint, rewind_points
from agent_core.loop.seams import CostBook, Permissions, SessionRecorder, Tools
from agent_core.loop.emitter import Emitter
from agent_core.loop.history import History
from agent_core.loop.turn import LoopParts, TurnRunner
from agent_core.loop.session_files import SessionFiles
from agent_core.loop.turn_state import TurnLimits, TurnState
from agent_core.pricing.cost import usage_buckets
from agent_core.providers.model import ModelClient, ModelInfo
from agent_core.sessions.session_age import session_started
from agent_core.sessions.session_log import SessionWriteError
from agent_core.tools.base import ToolContext
from agent_core.tools.changed_files import ChangedFiles
from agent_core.tools.file_restore import Restore
from agent_core.waiting import Pause, real_model_error

if TYPE_CHECKING:     # types only: the MCP SDK loads when the factory starts servers, not with the loop
    from agent_core.mcp.hub import McpHub, ServerStatus
    from agent_core.os_sandbox.sandbox import OsSandbox
    from agent_core.telemetry.sink import TelemetrySink

__all__ = ["Agent", "TurnLimits"]

Body = Callable[[], Coroutine[Any, Any, None]]


class Agent:
    """`interactive`: a front-end answers the PermissionRequest events it is sent (the TUI);
    without one (headless) a tool set to ask is decided by the policy alone."""

    def __init__(self, *, client: ModelClient, pipeline: Pipeline, tools: Tools, tool_ctx: ToolContext,
                 permissions: Permissions, cost: CostBook, system_prompt: str, session: SessionRecorder,
                 interactive: bool = False, limits: TurnLimits | None = None, entries: list[Entry] | None = None,
                 compactions: list[ev.Compaction] | None = None, mcp: McpHub | None = None) -> None:
        self.client = client
        self.pipeline = pipeline
        self.tools = tools
        self.tool_ctx = tool_ctx
        self.permissions = permissions
        self.cost = cost
        self.session = session
        self.session_id = session.session_id
        self.cache_watch = CacheWatch()   # why a request read short of the cache (the cache doctor)
        self.history = History(session, entries, compactions, self._prefix_rewritten)
        self.log = self.history.log
        self.head = RequestHead.of(system_prompt, tools.definitions())
        self.counter = Counter(pipeline, client, self.head, lambda: self.history.entries)
        self.figures = Figures(pipeline, self.head, self.counter)
        self.files = SessionFiles(tool_ctx)
        self.clock: Callable[[], float] = clock.now
        self.out = Emitter(self.history, self.figures, pipeline, lambda: self.clock(), self._state_parts)
        pipeline.on_before_summary(self.out.summary_figure)
        self.mcp = mcp                  # the MCP servers (agent_core/mcp/hub.py), started with the first turn
        self.on_tools_changed: list[Callable[[list[dict]], object]] = []   # the summarizer sends the same tools
        self.on_context: Callable[[ev.ContextUpdate], object] | None = None   # a confirmed figure while idle
        # Set by the factory (agent_core/loop/factory.py): the memory files read into the system prompt,
        # what to say once at start, where /threshold keeps its value, which engine runs and why.
        self.memory: Memory | None = None
        self.start_notices: list[str] = []
        self.threshold_file: Path | None = None
        self.engine = "local"
        self.engine_notice: str | None = None
        self.policy_notice: str | None = None
        # `/wait`'s clock move: installed by the factory on the offline demo only (agent_core/waiting.py)
        self.time_travel: Callable[[str], Pause] | None = None
        self._task: asyncio.Task[None] | None = None
        self._mcp_lock: asyncio.Lock | None = None
        self.parts = LoopParts(client=client, pipeline=pipeline, tools=tools, tool_ctx=tool_ctx,
                               permissions=permissions, cost=cost, head=self.head, counter=self.counter,
                               history=self.history, files=self.files, cache_watch=self.cache_watch, out=self.out,
                               limits=limits or TurnLimits(), interactive=interactive, now=lambda: self.clock(),
                               record_call=self.record_call, start_mcp=self.start_mcp,
                               confirm_later=self._confirm_count_later)
        self.runner = TurnRunner(self.parts)
        self.counter.apply()
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass              # built outside an event loop: the head is counted when the first turn starts
        else:
            self.counter.count_head_later()

    # ----- state for front-ends -------------------------------------------------------------
    @property
    def info(self) -> ModelInfo:
        return self.client.info

    @property
    def entries(self) -> list[Entry]:
        """The working history (the log keeps everything; compaction and /rewind cut this)."""
        return self.history.entries

    @entries.setter
    def entries(self, entries: list[Entry]) -> None:
        self.history.entries = entries

    @property
    def compactions(self) -> list[ev.Compaction]:
        return self.history.compactions

    @compactions.setter
    def compactions(self, compactions: list[ev.Compaction]) -> None:
        self.history.compactions = compactions

    @property
    def turns(self) -> int:
        """User turns of this session (a resumed one's earlier runs included)."""
        return self.figures.turns

    @turns.setter
    def turns(self, n: int) -> None:
        self.figures.turns = n

    @property
    def telemetry(self) -> TelemetrySink | None:
        """agent_core/telemetry's sink (set by the factory when a collector is configured)."""
        return self.out.telemetry

    @telemetry.setter
    def telemetry(self, sink: TelemetrySink | None) -> None:
        self.out.telemetry = sink

    @property
    def system_prompt(self) -> str:
        return self.head.system_prompt

    @system_prompt.setter
    def system_prompt(self, text: str) -> None:
        self.head.system_prompt = text

    @property
    def memory_tokens(self) -> int:
        """The memory files' part of the system prompt (set by the factory)."""
        return self.head.memory_tokens

    @memory_tokens.setter
    def memory_tokens(self, tokens: int) -> None:
        self.head.memory_tokens = tokens

    @property
    def mcp_tokens(self) -> dict[str, int]:
        """Each MCP server's tool definitions, estimated."""
        return self.head.mcp_tokens

    @property
    def context_history(self) -> list[tuple[int, int, bool]]:
        return self.figures.context_history

    @property
    def cache_ttl(self) -> str:
        """The prompt-cache TTL requests are written under (5m | 1h): /model prices a switch with it."""
        return self.pipeline.config.cache_ttl

    @property
    def busy(self) -> bool:
        return self._task is not None and not self._task.done()

    @property
    def budget(self) -> ContextBudget:
        """The thresholds the session works within now."""
        return self.pipeline.budget

    @property
    def sandbox(self) -> OsSandbox | None:
        """The OS sandbox bash runs in (agent_core/os_sandbox): /sandbox and the status line read it."""
        return self.tool_ctx.os_sandbox

    def tokens(self) -> int:
        """The count of what the next request would hold: the projected view (collapse replayed)."""
        return self.pipeline.view(self.entries)[1]

    def view(self) -> list[Entry]:
        """What the next request would hold: the projected view of the history (collapse replayed)."""
        return self.pipeline.view(self.entries)[0]

    def count_request(self, messages: list[dict]) -> int:
        """The calibrated count of a request of `messages` with the session's head (a summary request)."""
        return self.counter.count_request(messages)

    def context_event(self, tokens: int | None = None, view: list[Entry] | None = None) -> ev.ContextUpdate:
        """The context numbers now (figures.py); `tokens` and `view` when the pipeline just ran."""
        return self.figures.context_event(self.entries, self.clock(), tokens, view)

    def next_request(self, view: list[Entry] | None = None, tokens: int | None = None) -> NextRequest:
        """What the next request holds and costs now, warm and cold, and the cache's time left."""
        return self.figures.next_request(self.entries, self.clock(), view, tokens)

    def context_status(self) -> dict[str, Any]:
        """The figures `context_status` reports: the context pane's and the cost pane's, now."""
        return self.figures.status(self.entries, self.clock(), self.cost.event().total_usd)

    def cost_event(self) -> ev.CostUpdate:
        return self.cost.event()

    def api_seconds(self) -> float:
        """The session's model calls added up (/cost's API time)."""
        return self.figures.api_seconds()

    def active_seconds(self) -> float:
        """Seconds between the session's first and latest model call, idle time between runs left out."""
        return self.figures.active_seconds()

    def load_warnings(self) -> list[str]:
        """What resuming found wrong with the session log and repaired, one line per kind."""
        loaded = self.session.loaded
        return loaded.summary() if loaded is not None else []

    def started_at(self) -> float | None:
        """When the session began (/cost's wall time): its log's `created` on resume, else its id's stamp."""
        loaded = self.session.loaded
        return session_started(self.session_id, loaded.meta.get("created") if loaded is not None else None)

    def has_log(self) -> bool:
        """Whether the session was written to disk (a session with no content leaves no log)."""
        return self.session.path.is_file()

    def price(self, model: str, usage: dict) -> float | None:
        """Dollars of one call's `usage` at the session's rates (the demo borrows a real model's)."""
        return self.cost.price(model, usage_buckets(usage))

    def mcp_status(self) -> list[ServerStatus]:
        """Each MCP server's state and tools (/mcp, /context); empty without servers."""
        return self.mcp.status() if self.mcp is not None else []

    # ----- settings a front-end changes -------------------------------------------------------
    def set_threshold(self, pct: float | None) -> ContextBudget:
        """Auto-compact at `pct` from the next request on (threshold.py); raises ValueError out of bounds."""
        new = threshold.moved(self.pipeline.budget, pct, engine=self.engine, head_tokens=self.pipeline.overhead_tokens)
        self.pipeline.set_budget(new)
        return new

    def keep_threshold(self, pct: float | None) -> str:
        """Keep `pct` for this model in the user config file (`threshold_file`); says where."""
        return threshold.kept(self.threshold_file, self.info.model, pct)

    def let_time_pass(self, text: str = "") -> Pause:
        """`/wait`: on the demo model, move the clock on (the demo installs `time_travel`). Raises
        PauseError, and moves nothing, on a real model, during a turn or for a bad duration."""
        if self.time_travel is None:
            raise real_model_error(self.pipeline.config.cache_ttl)
        return self.time_travel(text)

    def record_call(self, call: ev.ModelCall) -> None:
        """One finished model call (a turn's answer, or a summary the compaction engine asked
        for): booked in the cost book and kept in the session log as its own record."""
        self.cost.add(call.model, call.usage, call.purpose)
        self.figures.call_done(call.duration_s, self.clock())
        self.log.event(call.to_dict())
        if self.telemetry is not None:
            self.telemetry(call)

    def live(self, e: ev.Event) -> None:
        """An event from outside the turn's own code (the summarizer's progress while it writes):
        passed on in the running turn's stream; dropped when no turn runs."""
        if self.busy and self.out.queue is not None:
            self.out.queue.put_nowait(e)

    # ----- public actions --------------------------------------------------------------------
    async def run(self, prompt: str) -> AsyncIterator[ev.Event]:
        """One user turn. Yields events; the last one is always TurnFinished. Never raises."""
        async for e in self._drive(self._turn(prompt)):
            yield e

    async def compact(self, focus: str | None = None) -> AsyncIterator[ev.Event]:
        """Manual `/compact [focus]`. While a turn runs it is queued until after the tool batch."""
        if self.busy:
            self.parts.compact_queue.ask(focus)
            yield ev.Notice("Compaction queued: it runs after the current tool batch.")
            return
        async for e in self._drive(self._manual_compact(focus)):
            yield e

    async def shell(self, command: str) -> AsyncIterator[ev.Event]:
        """`!command` (shell mode, shell_input.py): the user's own command, run by the bash tool's
        runner with no permission asked and no model called; it and its output become the user's
        message, logged like a prompt. `cancel()` kills it and adds nothing. Yields ShellRan, then
        the new context figure."""
        async for e in self._drive(self._guarded(lambda: self.runner.shell(command))):
            yield e

    async def preview_compact(self, focus: str | None = None) -> CompactionPreview:
        """`/compact --preview [focus]`: what a compaction now would do, cost and save, layer by
        layer (compaction_preview); nothing in the history, the log or the engine's state changes.
        Raises PreviewError while a turn runs (its history is half-written)."""
        if self.busy:
            raise PreviewError("A turn is running: preview the compaction once it ends, or press Esc to cancel it.")
        entries = list(self.entries)   # a turn started meanwhile appends to self.entries, not to this
        if not any(e.sent for e in entries):
            tokens = self.tokens()
            return CompactionPreview(focus, tokens, tokens, note="Nothing to compact yet.")
        nr = self.next_request()
        cached = nr.cached_tokens if (nr.cache_expires_in_s or 0) > 0 else 0
        size = summary_size(self.compactions, self.pipeline.budget.autocompact_threshold,
                            max(0, nr.tokens - self.pipeline.overhead_tokens))
        return await preview_compaction(self.pipeline, entries, focus, summary=size, cached_tokens=cached,
                                        now=self.clock())

    def cancel(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()

    def clear(self) -> None:
        """`/clear`: forget the conversation (the session log keeps it)."""
        self.figures.context_history.clear()
        self.counter.moved_on()
        try:
            self.history.replace([])
        except SessionWriteError:
            pass   # the next turn's first write catches the log up, or reports it

    def rewind_points(self) -> list[RewindPoint]:
        """The prompts `/rewind` can go back to, oldest first (agent_core/loop/rewind.py)."""
        return rewind_points(self.entries)

    def rewind(self, index: int) -> str:
        """Cut the working history to just before the prompt at `index` and return that prompt's
        text; the log keeps everything. Raises ValueError while a turn runs or for an index that
        is not a prompt's."""
        if self.busy:
            raise ValueError("A turn is running: press Esc first, then rewind.")
        point = next((p for p in self.rewind_points() if p.index == index), None)
        if point is None:
            raise ValueError("That is not a prompt of the working history.")
        self.counter.moved_on()
        self.history.replace(self.entries[:index])
        self.log.event(ev.Notice(f"Rewound to prompt {point.number}: {point.later_entries} entries left the "
                                 f"working history (this log keeps them).").to_dict())
        return point.text

    def file_plan(self, index: int) -> list[Restore] | None:
        """What rewinding to the prompt at `index` would put back (session_files.py); None: not known."""
        return self.files.plan(self.entries, index)

    def restore_files(self, plan: list[Restore]) -> list[str]:
        """Put the plan's files back (after the user saw its diff); a line per file, also logged."""
        if self.busy:
            raise ValueError("A turn is running: press Esc first, then rewind.")
        lines = self.files.restore(plan)
        if lines:
            self.log.event(ev.Notice("Files restored by /rewind: " + "; ".join(lines)).to_dict())
        return lines

    def changed_files(self) -> ChangedFiles | None:
        """The files this session's write and edit calls changed, with lines added and removed."""
        return self.files.changed()

    def session_diff(self) -> str:
        """`/diff`: every changed file from before the session to now ('' when nothing changed)."""
        return self.files.diff()

    async def start_mcp(self) -> list[str]:
        """Start the session's MCP servers once (the TUI at mount, or the first turn) and offer
        their tools from the next request on; the notices to show. Idempotent and safe to await
        from two tasks: the second waits for the first."""
        if self.mcp is None:
            return []
        if self._mcp_lock is None:
            self._mcp_lock = asyncio.Lock()
        async with self._mcp_lock:
            notices = await self.mcp.start()
            if notices:
                self.mcp.on_death = self._mcp_died
                for tool in self.mcp.tools:
                    self.tools.add(tool)
                self.head.use_tools(self.tools.definitions(), self.mcp.tools)
                for hook in self.on_tools_changed:
                    hook(self.head.tool_defs)
                self.counter.tools_changed()
            return notices

    def _mcp_died(self, notice: str) -> None:
        if self.busy:
            self.live(ev.Notice(notice))
        else:
            self.parts.mcp_notices.append(notice)

    async def aclose(self) -> None:
        self.cancel()
        self.counter.close()
        if self._task is not None:
            try:
                await self._task
            except BaseException:
                pass
        try:
            self.out.log_state()
        except SessionWriteError:
            pass   # the last snapshot is lost; the history in the log is whole
        self.session.close()
        if self.mcp is not None:
            await self.mcp.stop()
        if self.tool_ctx.os_sandbox is not None:
            self.tool_ctx.os_sandbox.close()     # its network proxy and socket folder, when one was started
        await self.client.aclose()
        if self.telemetry is not None:      # flushed off the loop, bounded (agent_core/telemetry/exporter.py)
            await asyncio.to_thread(self.telemetry.close)

    # ----- the machinery ---------------------------------------------------------------------
    async def _drive(self, body: Body) -> AsyncIterator[ev.Event]:
        if self.busy:
            yield ev.Error("busy", "A turn is already running; wait for it or press Esc to cancel it.")
            return
        queue: asyncio.Queue = asyncio.Queue()
        self.out.queue = queue
        done = object()
        # The end is signalled when the task is done, not from a `finally` in it: a task cancelled
        # before its first step (an Esc or ACP cancel right after the prompt) never runs its body.
        task = self._task = asyncio.create_task(body())
        task.add_done_callback(lambda _task: queue.put_nowait(done))
        try:
            while True:
                item = await queue.get()
                if item is done:
                    break
                yield item
        finally:
            if not task.done():
                task.cancel()
            try:
                await task
            except BaseException:
                pass

    def _guarded(self, body: Body, repair: Callable[[], None] = lambda: None) -> Body:
        """A body that ends like a turn on a failed log write: the history in memory is repaired
        (not logged: the log keeps its last whole line and is repaired on resume) and the user told."""
        async def guarded() -> None:
            try:
                await body()
            except SessionWriteError as e:
                with self.log.paused():
                    repair()
                    self.out.emit(ev.Error("session_log", str(e)))
                    self.out.finish("error")
        return guarded

    def _turn(self, prompt: str) -> Body:
        turn = TurnState()

        async def body() -> None:
            try:
                await self.runner.run(prompt, turn)
            except asyncio.CancelledError:
                self.runner.repair(turn)
                # The last figure was taken before the call; the repaired history (partial
                # answer, cancelled results) is what resume rebuilds, so say its figure now.
                self.out.context()
                self.out.finish("cancelled")
            except SessionWriteError:
                raise
            except Exception as exc:  # a bug of ours: report it, keep the session usable
                self.runner.repair(turn)
                self.out.emit(ev.Error("internal", f"Internal error: {type(exc).__name__}: {exc}. "
                                                   "The session is saved; you can go on or resume it."))
                self.out.finish("error")
        return self._guarded(body, lambda: self.runner.repair(turn))

    def _manual_compact(self, focus: str | None) -> Body:
        async def body() -> None:
            try:
                await self.runner.compact_now(focus)
            except asyncio.CancelledError:
                self.out.emit(ev.Notice("Compaction cancelled; the history is unchanged."))
            self.out.log_state()
            self.out.emit(ev.TurnFinished(stop_reason="compacted", turns=self.turns))
        return self._guarded(body)

    def _state_parts(self) -> dict[str, object]:
        """What resume needs, as the state snapshot keeps it."""
        return {"pipeline": self.pipeline.snapshot(), "cost": self.cost.to_dict(),
                "permissions": self.permissions.to_dict(), "turns": self.turns,
                "context_history": self.figures.plot_points(),
                "active_s": round(self.active_seconds(), 3), "api_s": round(self.api_seconds(), 3),
                "last_request": self.cache_watch.state()}

    def _prefix_rewritten(self) -> None:
        """A compaction was kept: the next request reads its prefix anew, and a count confirmation
        still on its way counted the history before it."""
        self.cache_watch.rewritten = True
        self.counter.moved_on()

    def _confirm_count_later(self, request: list[dict], view: list[Entry]) -> None:
        self.counter.confirm_later(request, view, self._count_confirmed)

    def _count_confirmed(self, reanchored: list[Entry] | None) -> None:
        """count_tokens confirmed the count after a compaction: the history re-anchored on it, the
        figure said (in the turn's stream, or to the front-end while idle)."""
        try:
            if reanchored is not None:
                self.history.adopt(reanchored)
            c = self.context_event()
            if self.busy and self.out.queue is not None:
                self.out.queue.put_nowait(c)
            elif self.on_context is not None:
                self.on_context(c)
            if not self.busy:
                self.out.log_state()
        except SessionWriteError:
            pass   # the next write of the turn catches the log up, or reports it
