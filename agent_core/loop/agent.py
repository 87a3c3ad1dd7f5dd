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
import time
from pathlib import Path
from typing import Any, AsyncIterator, Callable, Coroutine

from compaction import Entry, Pipeline, clock
from compaction.accounting.budget import ContextBudget
from compaction.next_request import NextRequest
from compaction.entry import tool_result_block
from compaction.pipeline import PipelineResult

from agent_core import events as ev
from agent_core.loop import server_window
from agent_core.loop.cache_watch import CacheWatch
from agent_core.loop.cancelled import CANCELLED_RESULT
from agent_core.loop import compaction_runs, threshold
from agent_core.loop.compaction_events import parts_of
from agent_core.loop.compaction_preview import CompactionPreview, PreviewError, preview_compaction, summary_size
from agent_core.loop.counting import Counter, added_since_usage
from agent_core.loop.figures import Figures
from agent_core.loop.memory_files import Memory
from agent_core.loop.request_head import RequestHead
from agent_core.loop.rewind import RewindPoint, rewind_points
from agent_core.loop.seams import Ask, CostBook, Permissions, SessionRecorder, Tools
from agent_core.loop.server_engine import answer_meta, outcome_of, paused_after_compaction, server_compaction
from agent_core.loop.history import History
from agent_core.loop.session_files import SessionFiles
from agent_core.loop.shell_input import run_shell
from agent_core.loop.tool_batch import run_batch
from agent_core.loop.turn_state import MID_STREAM_RETRIES, TurnLimits, TurnState, max_tokens, over_limit, refit_room
from agent_core.mcp.hub import McpHub
from agent_core.mentions.attach import mention_entry
from agent_core.os_sandbox.sandbox import OsSandbox
from agent_core.pricing.cost import usage_buckets
from agent_core.providers.anthropic_client import NOT_BELIEVABLE
from agent_core.providers.errors import parse_max_tokens_over_window
from agent_core.providers.model import ModelClient, ModelError, ModelInfo, ModelResponse
from agent_core.providers.server_context import ignored_notice
from agent_core.sessions.session_age import session_started
from agent_core.sessions.session_log import SessionWriteError
from agent_core.sessions.valid_text import valid_text
from agent_core.tools.base import ToolContext
from agent_core.tools.changed_files import ChangedFiles
from agent_core.tools.file_restore import Restore
from agent_core.waiting import Pause, real_model_error

__all__ = ["Agent", "TurnLimits"]

Body = Callable[[asyncio.Queue], Coroutine[Any, Any, None]]


class Agent:
    """`interactive`: a front-end answers the PermissionRequest events it is sent (the TUI);
    without one (headless) a tool set to ask is decided by the policy alone."""

    def __init__(self, *, client: ModelClient, pipeline: Pipeline, tools: Tools, tool_ctx: ToolContext,
                 permissions: Permissions, cost: CostBook, system_prompt: str, session: SessionRecorder,
                 interactive: bool = False, limits: TurnLimits | None = None, entries: list[Entry] | None = None,
                 compactions: list[ev.Compaction] | None = None, mcp: McpHub | None = None) -> None:
        self.client = client
        self.pipeline = pipeline
        pipeline.on_before_summary(self._say_summary_figure)
        self.tools = tools
        self.tool_ctx = tool_ctx
        self.permissions = permissions
        self.cost = cost
        self.session = session
        self.session_id = session.session_id
        self.interactive = interactive
        self.limits = limits or TurnLimits()
        self.cache_watch = CacheWatch()   # why a request read short of the cache (the cache doctor)
        self.history = History(session, entries, compactions, self._prefix_rewritten)
        self.log = self.history.log
        self.head = RequestHead.of(system_prompt, tools.definitions())
        self.counter = Counter(pipeline, client, self.head, lambda: self.history.entries)
        self.figures = Figures(pipeline, self.head, self.counter)
        self.files = SessionFiles(tool_ctx)
        self.clock: Callable[[], float] = clock.now
        self.turns = 0
        self.mcp = mcp                  # the MCP servers (agent_core/mcp/hub.py), started with the first turn
        self.on_tools_changed: list[Callable[[list[dict]], object]] = []   # the summarizer sends the same tools
        self.on_context: Callable[[ev.ContextUpdate], object] | None = None   # a confirmed figure while idle
        self.telemetry: Any = None      # agent_core/telemetry's sink (the factory), when a collector is set
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
        self._queue: asyncio.Queue | None = None
        self._compact_after_tools = False   # /compact while busy, or the compact tool: run once the batch is done
        self._compact_focus: str | None = None
        self._mcp_lock: asyncio.Lock | None = None
        self._mcp_notices: list[str] = []      # said at the next turn's start (a server that died while idle)
        self._request_tokens = 0        # the count of the request about to be sent (clamps max_tokens)
        self._request_estimate = 0      # the plain estimate of that request's messages (calibration)
        self._request_added: tuple[int, int] | None = None   # its anchor's usage, the estimate added since
        self._compaction_started: float | None = None   # when the server began a compaction in this call
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

    def mcp_status(self) -> list[Any]:
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
        if self.busy and self._queue is not None:
            self._queue.put_nowait(e)

    # ----- public actions --------------------------------------------------------------------
    async def run(self, prompt: str) -> AsyncIterator[ev.Event]:
        """One user turn. Yields events; the last one is always TurnFinished. Never raises."""
        async for e in self._drive(self._turn(prompt)):
            yield e

    async def compact(self, focus: str | None = None) -> AsyncIterator[ev.Event]:
        """Manual `/compact [focus]`. While a turn runs it is queued until after the tool batch."""
        if self.busy:
            self._compact_after_tools, self._compact_focus = True, focus
            yield ev.Notice("Compaction queued: it runs after the current tool batch.")
            return
        async for e in self._drive(self._manual_compact(focus)):
            yield e

    async def shell(self, command: str) -> AsyncIterator[ev.Event]:
        """`!command` (shell mode, shell_input.py): the user's own command, run by the bash tool's
        runner with no permission asked and no model called; it and its output become the user's
        message, logged like a prompt. `cancel()` kills it and adds nothing. Yields ShellRan, then
        the new context figure."""
        async for e in self._drive(self._guarded(lambda q: self._shell(q, command))):
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
            self._mcp_notices.append(notice)

    async def aclose(self) -> None:
        self.cancel()
        self.counter.close()
        if self._task is not None:
            try:
                await self._task
            except BaseException:
                pass
        try:
            self._log_state()
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
        self._queue = queue
        done = object()
        # The end is signalled when the task is done, not from a `finally` in it: a task cancelled
        # before its first step (an Esc or ACP cancel right after the prompt) never runs its body.
        task = self._task = asyncio.create_task(body(queue))
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

    def _guarded(self, body: Body) -> Body:
        """A body that ends like a turn on a failed log write (nothing to repair in memory)."""
        async def guarded(q: asyncio.Queue) -> None:
            try:
                await body(q)
            except SessionWriteError as e:
                self._log_write_failed(q, e, lambda: None)
        return guarded

    def _emit(self, q: asyncio.Queue, e: ev.Event) -> None:
        if e.logged:
            self.log.event(e.to_dict())
        q.put_nowait(e)
        if self.telemetry is not None:
            self.telemetry(e)

    def _append(self, entry: Entry) -> None:
        self.history.append(entry)

    def _adopt(self, new_entries: list[Entry]) -> None:
        self.history.adopt(new_entries)

    def _log_state(self) -> None:
        """Snapshot what resume needs (the writer writes only the parts that changed)."""
        self.log.state({"pipeline": self.pipeline.snapshot(), "cost": self.cost.to_dict(),
                        "permissions": self.permissions.to_dict(), "turns": self.turns,
                        "context_history": self.figures.plot_points(),
                        "active_s": round(self.active_seconds(), 3), "api_s": round(self.api_seconds(), 3),
                        "last_request": self.cache_watch.state()})

    def _prefix_rewritten(self) -> None:
        """A compaction was kept: the next request reads its prefix anew, and a count confirmation
        still on its way counted the history before it."""
        self.cache_watch.rewritten = True
        self.counter.moved_on()

    def _say_figure_before_pipeline(self, q: asyncio.Queue) -> int | None:
        """When what the next request would hold has reached the warning threshold, say that figure
        before the pipeline acts on it (and return it): the gauge, the status line and the plot then
        show the tool results landing — the context reaching WARNING, ERROR or AUTO-COMPACT — and the
        drop when a compaction lands."""
        budget = self.pipeline.budget
        # the stored history counts at least what its projection does: below the warning, no view
        if self.pipeline.count(self.entries) < budget.warning_threshold:
            return None
        view, tokens = self.pipeline.view(self.entries)
        if not self.figures.worth_saying(tokens, budget.warning_threshold):
            return None
        self._context(q, tokens=tokens, view=view)
        return tokens

    def _say_summary_figure(self, res: PipelineResult) -> None:
        """The pipeline is about to summarize at the auto-compact threshold: say the count it acts on
        (after the cheap layers), so the gauge shows AUTO-COMPACT while the summary is written."""
        low = self.pipeline.budget.autocompact_threshold
        if self._queue is not None and self.figures.worth_saying(res.tokens, low):
            self._context(self._queue, tokens=res.tokens, view=res.view)

    def _context(self, q: asyncio.Queue, compacted: bool = False, tokens: int | None = None,
                 view: list[Entry] | None = None) -> ev.ContextUpdate:
        c = self.context_event(tokens, view)
        self.figures.plotted(self.turns, c.tokens, compacted)
        self._emit(q, c)
        return c

    def _finish(self, q: asyncio.Queue, reason: str) -> None:
        self._log_state()
        self._emit(q, ev.TurnFinished(stop_reason=reason, turns=self.turns))

    def _log_write_failed(self, q: asyncio.Queue, e: SessionWriteError, repair: Callable[[], None]) -> None:
        """End the turn on a failed log write: the history in memory is repaired (not logged, the
        log keeps its last whole line and is repaired on resume) and the user told what to do."""
        with self.log.paused():
            repair()
            self._emit(q, ev.Error("session_log", str(e)))
            self._finish(q, "error")

    def _confirm_count_later(self, request: list[dict], view: list[Entry]) -> None:
        self.counter.confirm_later(request, view, self._count_confirmed)

    def _count_confirmed(self, reanchored: list[Entry] | None) -> None:
        """count_tokens confirmed the count after a compaction: the history re-anchored on it, the
        figure said (in the turn's stream, or to the front-end while idle)."""
        try:
            if reanchored is not None:
                self._adopt(reanchored)
            c = self.context_event()
            if self.busy and self._queue is not None:
                self._queue.put_nowait(c)
            elif self.on_context is not None:
                self.on_context(c)
            if not self.busy:
                self._log_state()
        except SessionWriteError:
            pass   # the next write of the turn catches the log up, or reports it

    # ----- a turn ------------------------------------------------------------------------------
    def _turn(self, prompt: str) -> Body:
        async def body(q: asyncio.Queue) -> None:
            turn = TurnState()
            try:
                try:
                    await self._turn_body(prompt, q, turn)
                except asyncio.CancelledError:
                    self._repair_after_cancel(turn)
                    # The last figure was taken before the call; the repaired history (partial
                    # answer, cancelled results) is what resume rebuilds, so say its figure now.
                    self._context(q)
                    self._finish(q, "cancelled")
                except SessionWriteError:
                    raise
                except Exception as exc:  # a bug of ours: report it, keep the session usable
                    self._repair_after_cancel(turn)
                    self._emit(q, ev.Error("internal", f"Internal error: {type(exc).__name__}: {exc}. "
                                                      "The session is saved; you can go on or resume it."))
                    self._finish(q, "error")
            except SessionWriteError as e:
                self._log_write_failed(q, e, lambda: self._repair_after_cancel(turn))
        return body

    def _repair_after_cancel(self, turn: TurnState) -> None:
        """Keep what was done; answer unanswered tool calls so the history stays valid. Runs at
        most once per turn (a failed log write can interrupt it and call it again)."""
        pending, partial = turn.pending_tool_uses, "".join(turn.partial_text)
        turn.pending_tool_uses, turn.partial_text = [], []
        if pending:
            blocks = [turn.done_results.get(tu["id"]) or tool_result_block(tu["id"], CANCELLED_RESULT, is_error=True)
                      for tu in pending]
            self._append(Entry({"role": "user", "content": blocks}))
        elif partial.strip():
            self._append(Entry({"role": "assistant", "content": [
                {"type": "text", "text": partial}]}, meta={"cancelled": True}))

    async def _turn_body(self, prompt: str, q: asyncio.Queue, turn: TurnState) -> None:
        """Model calls and tool batches until the model stops asking for tools, a limit is hit
        or a call fails for good; every way out ends with TurnFinished."""
        prompt = valid_text(prompt)   # e.g. undecodable stdin: it must encode, in the request and the log
        self.turns += 1
        mentioned = await mention_entry(prompt, self.tool_ctx)   # the files it @-mentions, attached
        self._append(mentioned.entry)
        self.files.checkpoint(mentioned.entry)   # what /rewind can put back
        self._emit(q, ev.TurnStarted(turn=self.turns, prompt=prompt))
        for said in mentioned.events:
            self._emit(q, said)
        for notice in await self.start_mcp() + self._mcp_notices:
            self._emit(q, ev.Notice(notice))
        self._mcp_notices = []
        await self.counter.head_counted()
        while True:
            stop = over_limit(self.limits, turn.calls, self.cost.total_usd)
            if stop is not None:
                self._emit(q, ev.Error(*stop))
                return self._finish(q, stop[0])
            request = await self._compacted_request(q)
            if request is None:
                return self._finish(q, "blocking")
            try:
                response = await self._call_model(request, q, turn)
            except ModelError as e:
                if await self._recovered(q, e, turn):
                    continue
                return self._finish(q, "error")
            tool_uses = self._record_answer(q, response, turn)
            if response.stop_reason == "compaction":
                continue   # the server paused after compacting: the answer follows in the next call
            if not tool_uses:
                return self._finish(q, response.stop_reason or "end_turn")
            batch = await run_batch(tool_uses, turn, tools=self.tools, permissions=self.permissions,
                                    ctx=self.tool_ctx, ask=self._asker(q), emit=lambda e: self._emit(q, e))
            if batch.compact_requested:
                self._compact_after_tools, self._compact_focus = True, batch.compact_focus
            self._append(Entry({"role": "user", "content": batch.blocks}))
            trouble = self.files.trouble()
            if trouble:
                self._emit(q, ev.Notice(trouble))
            self._log_state()
            await self._compact_if_queued(q)

    async def _compact_if_queued(self, q: asyncio.Queue) -> None:
        """/compact while a batch or a shell command ran, or the compact tool: its turn is now."""
        if self._compact_after_tools:
            focus, self._compact_after_tools, self._compact_focus = self._compact_focus, False, None
            await self._compact_now(q, focus)

    async def _compacted_request(self, q: asyncio.Queue) -> list[dict] | None:
        """Run the pipeline over the history and return the messages to send; None when the
        context is at the blocking limit (said as an Error)."""
        said = self._say_figure_before_pipeline(q)
        res = await self.pipeline.run(self.entries)
        self._request_tokens = res.tokens
        self._request_estimate = sum(e.tokens for e in res.view)
        self._request_added = added_since_usage(res.view)
        compacted = self.history.adopt_reports(res.entries, res.reports, self.pipeline, lambda e: self._emit(q, e))
        if compacted or res.tokens != said:     # the figure just said is still the figure
            self._context(q, compacted, tokens=res.tokens, view=res.view)
        if compacted:
            self._confirm_count_later(res.request, res.view)
        blocked = self.pipeline.blocked(res.tokens, res.view)
        if blocked:
            self._emit(q, ev.Error("blocking", blocked))
            return None
        return res.request

    async def _call_model(self, request: list[dict], q: asyncio.Queue, turn: TurnState) -> ModelResponse:
        started = time.monotonic()
        response: ModelResponse | None = None
        head = self.head
        self.cache_watch.sending(model=self.client.info.model, at=self.clock(), ttl=self.pipeline.config.cache_ttl,
                                 tools=head.tool_defs, system=head.system_prompt, messages=request,
                                 head_tokens=(head.tools_tokens, head.system_tokens))
        limit = max_tokens(self.pipeline.budget, self.client.info.max_output_tokens, self._request_tokens,
                           turn.undercount, self.pipeline.api_judges)
        async for item in self.client.stream(system=head.system_prompt, messages=request, tools=head.tool_defs,
                                             max_tokens=limit, purpose="main"):
            if isinstance(item, ModelResponse):
                response = item
            else:
                if isinstance(item, ev.CompactionStarted) and not item.tokens_before:
                    item.tokens_before = self._request_tokens   # the server is summarizing what was sent
                    self._compaction_started = item.started
                if isinstance(item, ev.TextDelta):
                    turn.partial_text.append(item.text)
                q.put_nowait(item)
        if response is None:
            raise ModelError("server", "The model's answer ended without a final message; try again.", True)
        turn.call_s = round(time.monotonic() - started, 3)
        return response

    def _record_answer(self, q: asyncio.Queue, response: ModelResponse, turn: TurnState) -> list[dict]:
        """Add the answer to the history and the cost book; returns the tool calls it asks for."""
        turn.calls += 1
        turn.partial_text.clear()
        outcome = outcome_of(response)
        paused = paused_after_compaction(response, outcome)
        odd = response.usage.get(NOT_BELIEVABLE)    # usage_to_dict zeroed it: said, and the count estimates
        if odd:
            self._emit(q, ev.Notice(str(odd)))
        self._append(Entry({"role": "assistant", "content": response.content}, response_id=response.id,
                           usage=None if paused or odd else response.usage, meta=answer_meta(response, outcome)))
        if not paused and (outcome is None or not outcome.acted) and response.usage:
            self.counter.learn_from_answer(response.usage, self.entries[-1], self._request_added,
                                           self._request_estimate)
        self.record_call(ev.ModelCall(message_id=response.id, model=response.model, purpose="main",
                                      usage=response.usage, duration_s=turn.call_s))
        miss = self.cache_watch.answered(response.usage)
        if miss is not None:
            self._emit(q, ev.CacheMiss(text=miss.text(), **miss.to_dict()))
        if outcome is not None and outcome.compaction_usage:
            self.record_call(ev.ModelCall(message_id=f"{response.id}:compaction", model=response.model,
                                          purpose="compaction", usage=outcome.compaction_usage))
        self._emit(q, ev.AssistantDone(message_id=response.id, model=response.model, usage=response.usage,
                                       stop_reason=response.stop_reason))
        self._emit(q, self.cost.event())
        compacted = False
        if outcome is not None:
            if outcome.ignored:
                self._emit(q, ev.Notice(ignored_notice(outcome.ignored)))
            started, self._compaction_started = self._compaction_started or time.time(), None
            before = self.entries
            server = server_compaction(outcome, response.usage, before, self._request_tokens, started, self.pipeline)
            if server.entries is not None:
                self._adopt(server.entries)
                last = server.events[-1]
                assert isinstance(last, ev.Compaction)
                last.parts = parts_of(before, self.entries, [last.layer], self.pipeline)
            compacted = self.history.say(server.events, lambda e: self._emit(q, e))
        self.counter.moved_on()
        self._context(q, compacted)
        return [b for b in response.content if b.get("type") == "tool_use"]

    async def _recovered(self, q: asyncio.Queue, e: ModelError, turn: TurnState) -> bool:
        """After a failed call: True when it is worth sending again (compacted once after "prompt
        too long", or a stream that broke off); otherwise the failure is said as an Error."""
        if self._refitted(q, e, turn):
            return True
        if e.kind == "prompt_too_long" and not turn.reactive_used:
            turn.reactive_used = True
            self._emit(q, ev.Notice("The model said the prompt is too long; compacting and retrying once."))
            return await self._compact_to_fit(q, e, turn)
        if e.retryable and e.status is None and not e.already_retried \
                and turn.stream_retries < MID_STREAM_RETRIES:
            turn.stream_retries += 1
            turn.partial_text.clear()
            self._emit(q, ev.StreamRetry(e.message.split(";")[0], turn.stream_retries, MID_STREAM_RETRIES))
            await asyncio.sleep(0.2 * turn.stream_retries)
            return True
        self._emit(q, ev.Error(e.kind, e.message, e.retryable))
        return False

    def _refitted(self, q: asyncio.Queue, e: ModelError, turn: TurnState) -> bool:
        """The API counted more than the estimate and refused input + max_tokens over the window:
        send once more with the room it says is left (no compaction) when that room is enough. A
        window it names that is smaller than ours is ours from now on (server_window.py)."""
        over = parse_max_tokens_over_window(e.message) if e.kind == "prompt_too_long" else None
        if over is None or turn.refit_used:
            return False
        counted, _asked, window = over
        turn.refit_used = True
        self._adopt_server_window(q, window)
        turn.undercount, fits = refit_room(self.pipeline.budget, self.client.info.max_output_tokens,
                                           self._request_tokens, counted, window)
        return fits

    def _adopt_server_window(self, q: asyncio.Queue, window: int) -> None:
        """Work within the API's smaller window for the rest of the session (said once)."""
        notice = server_window.adopt(self.pipeline, self.client, self.tool_ctx, window)
        if notice is not None:
            self._emit(q, ev.Notice(notice))

    async def _compact_to_fit(self, q: asyncio.Queue, e: ModelError, turn: TurnState) -> bool:
        """The one compaction after "prompt too long" (compaction_runs.to_fit). True: send again."""
        fitted = await compaction_runs.to_fit(e, self.pipeline, self.history, self._request_tokens,
                                              lambda window: self._adopt_server_window(q, window),
                                              lambda said: self._emit(q, said))
        if fitted is None:
            return False
        turn.undercount = fitted.undercount   # an earlier refit's figure belonged to the longer request
        self._context(q, True, tokens=fitted.tokens, view=fitted.view)
        self._confirm_count_later(fitted.request, fitted.view)
        return True

    def _asker(self, q: asyncio.Queue) -> Ask | None:
        """How the policy asks: the request goes out with the other events and the front-end
        answers on the request itself. None when no one is there to answer."""
        if not self.interactive:
            return None

        async def ask(req: ev.PermissionRequest) -> str:
            self._emit(q, req)
            return await req.reply
        return ask

    # ----- shell mode and /compact -----------------------------------------------------------------
    async def _shell(self, q: asyncio.Queue, command: str) -> None:
        try:
            done = await run_shell(valid_text(command), self.tool_ctx)
        except asyncio.CancelledError:
            self._emit(q, ev.ShellRan(command, "", cancelled=True))
            return
        try:
            entry = done.entry()
            self._append(entry)        # kept in memory on a failed write: the next one catches up
            self.files.checkpoint(entry)
        finally:
            self._emit(q, ev.ShellRan(done.command, done.output, done.exit_code, done.is_error))
        self._log_state()
        self._context(q)
        await self._compact_if_queued(q)    # /compact while it ran: queued until now, as after a tool batch

    def _manual_compact(self, focus: str | None) -> Body:
        async def body(q: asyncio.Queue) -> None:
            try:
                await self._compact_now(q, focus)
            except asyncio.CancelledError:
                self._emit(q, ev.Notice("Compaction cancelled; the history is unchanged."))
            self._log_state()
            self._emit(q, ev.TurnFinished(stop_reason="compacted", turns=self.turns))
        return self._guarded(body)

    async def _compact_now(self, q: asyncio.Queue, focus: str | None) -> None:
        ran = await compaction_runs.manual(self.pipeline, self.history, focus, self.tokens(),
                                           lambda e: self._emit(q, e))
        if ran is None:
            return
        out, compacted = ran
        self._context(q, compacted)
        if compacted:
            self._confirm_count_later(out.request, out.view)
        self._emit(q, self.cost.event())
