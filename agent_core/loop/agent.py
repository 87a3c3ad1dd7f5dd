"""The agent loop: one user turn at a time, compaction before every model call (the whole
path of a prompt: docs/architecture.md, "The flow of one prompt").

`run(prompt)` drives a turn in its own task and yields its events from a queue, so `cancel()`
can stop a stream or a tool batch at any point and still leave a valid, logged history.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import math
import time
from pathlib import Path
from dataclasses import dataclass, field, replace
from typing import Any, AsyncIterator, Awaitable, Callable

from compaction import Entry, Pipeline, breakdown, clock
from compaction.accounting.budget import ContextBudget
from compaction.loss_report import loss_report
from compaction.next_request import NextRequest, next_request
from compaction.entry import tool_result_block
from compaction.estimate import MESSAGE_OVERHEAD, estimate_message, estimate_tools
from compaction.pipeline import PipelineResult
from compaction.report import CompactionReport
from compaction.accounting.tokens import CategoryTally, adjust_anchor, anchor_index, estimate_text, usage_total

from agent_core import events as ev
from agent_core import threshold_store
from agent_core.context_budget import ESTIMATE_MARGIN, MIN_TURN_TOKENS, OUTPUT_FLOOR, output_room
from agent_core.loop.cache_watch import CacheWatch
from agent_core.loop.memory_files import Memory
from agent_core.loop.compaction_parts import compaction_parts
from agent_core.loop.compaction_preview import CompactionPreview, PreviewError, preview_compaction, summary_size
from agent_core.loop.packed_parts import PARTS_LIVE, pack_older
from agent_core.loop.rewind import RewindPoint, rewind_points
from agent_core.loop.seams import Ask, CostBook, Permissions, SessionRecorder, Tools
from agent_core.loop.shell_input import run_shell
from agent_core.mentions.attach import mention_entry
from agent_core.loop.server_engine import FAILED_COMPACTION, clear_events, compact_event, without_summarized
from agent_core.loop import server_window
from agent_core.pricing.cost import usage_buckets
from agent_core.waiting import Pause, real_model_error
from agent_core.providers.anthropic_client import NOT_BELIEVABLE
from agent_core.providers.errors import parse_max_tokens_over_window, parse_prompt_too_long
from agent_core.providers.model import ModelClient, ModelError, ModelResponse
from agent_core.providers.server_context import (COMPACTION_BLOCK, SERVER_COMPACT_LAYER, ServerOutcome, ignored_notice,
                                                 read_outcome)
from agent_core.sessions.session_age import session_started
from agent_core.sessions.session_log import SessionWriteError
from agent_core.sessions.valid_text import valid_entry, valid_text
from agent_core.tools.base import ToolContext
from agent_core.tools.changed_files import ChangedFiles, session_diff
from agent_core.tools.file_restore import Restore, apply_restore, restore_plan
from agent_core.loop.cancelled import CANCELLED_RESULT

# The SDK retries failed requests itself, but never a stream that broke after it started.
MID_STREAM_RETRIES = 2
COUNTED = "counted"   # the pipeline-state part that keeps what count_tokens corrected (survives resume)
# The calibration (docs/engine.md, "Counting"): server tokens per estimated token, learnt from a
# request the server counted, once its messages are estimated at this many tokens at least (a
# shorter one says more about the head's count than about the ratio); kept within these bounds.
CALIBRATE_MIN_ESTIMATE = 500
CALIBRATION_BOUNDS = (0.25, 4.0)
# Answers are counted at their own rate (output tokens against their estimate, the latest weighing
# most: each answer's figures join sums that decay by ANSWERS_DECAY), once the sums reach this size.
CALIBRATE_MIN_ANSWERS = 300
ANSWERS_DECAY = 0.8
# The head (system prompt and tools) is counted by count_tokens with this one short message; the
# first model call waits for that count at most this long, once a session (the SDK it loads is the one
# the call needs anyway: beyond that, one count_tokens round trip).
HEAD_PROBE = [{"role": "user", "content": [{"type": "text", "text": "."}]}]
HEAD_WAIT_S = 5.0
PLOT_POINTS = 240     # context-history points kept in the state snapshot (the plot shows the latest)


def _positive(v: object) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 else None


def _added_since_usage(view: list[Entry]) -> tuple[int, int] | None:
    """(the usage anchor's count, the estimate of what follows it) for a request whose anchor no
    layer has shifted: the server's count of it less the first is what it counts for the second."""
    i = anchor_index(view)
    if i is None:
        return None
    a = view[i]
    if a.meta.get("usage_adjust") or a.meta.get("real_adjust") or a.meta.get("server_edits"):
        return None
    return usage_total(a.usage), sum(e.tokens for e in view[i + 1:])


def _cache_figures(details: dict) -> dict | None:
    """The cache economics a compaction report carries (`details["cache"]`), as plain numbers and
    words for the event; None when the layer said nothing about the cache."""
    cache = details.get("cache")
    if not isinstance(cache, dict):
        return None
    return {k: v for k, v in cache.items() if isinstance(v, (int, float, str)) or v is None}


@dataclass
class TurnLimits:
    max_turns: int | None = None          # model calls per run()
    max_budget_usd: float | None = None   # session cost at which runs stop


@dataclass
class _Turn:
    """Mutable bookkeeping of the running turn, so a cancel can repair history."""
    calls: int = 0
    partial_text: list[str] = field(default_factory=list)
    pending_tool_uses: list[dict] = field(default_factory=list)
    done_results: dict[str, dict] = field(default_factory=dict)
    reactive_used: bool = False        # the one compaction after "prompt too long" was spent
    stream_retries: int = 0            # answers that broke off mid-stream and were sent again
    refit_used: bool = False           # the one resend after "input length and max_tokens exceed ..."
    undercount: int = 0                # tokens the API counted above the estimate (learnt from that error)
    call_s: float = 0.0                # how long the latest main call took, request to last byte


class Agent:
    """`interactive`: a front-end answers the PermissionRequest events it is sent (the TUI);
    without one (headless) a tool set to ask is decided by the policy alone."""

    def __init__(self, *, client: ModelClient, pipeline: Pipeline, tools: Tools, tool_ctx: ToolContext,
                 permissions: Permissions, cost: CostBook, system_prompt: str, session: SessionRecorder,
                 interactive: bool = False, limits: TurnLimits | None = None, entries: list[Entry] | None = None,
                 compactions: list[ev.Compaction] | None = None, mcp: Any = None) -> None:
        self.client = client
        self.pipeline = pipeline
        pipeline.on_before_summary(self._say_summary_figure)
        self.tools = tools
        self.tool_ctx = tool_ctx
        self.permissions = permissions
        self.cost = cost
        self.system_prompt = system_prompt
        self.session = session
        self.interactive = interactive
        self.limits = limits or TurnLimits()
        self.entries: list[Entry] = list(entries or [])
        self.compactions: list[ev.Compaction] = list(compactions or [])
        pack_older(self.compactions)
        self.context_history: list[tuple[int, int, bool]] = []
        self.session_id = session.session_id
        # Seconds of model activity (first call to latest) in earlier runs of this session, and this
        # run's span: the burn rate is dollars over active time, so a resumed session shows the same.
        self.active_before = 0.0
        self._calls_span: tuple[float, float] | None = None
        # Seconds spent in model calls (request to last byte, summaries included): earlier runs of
        # this session (from its log) and this run; /cost shows them as API time.
        self.api_before = 0.0
        self._api_s = 0.0
        self.clock: Callable[[], float] = clock.now
        self.turns = 0
        self._task: asyncio.Task | None = None
        self._compact_after_tools = False   # /compact while busy, or the compact tool: run once the batch is done
        self._compact_focus: str | None = None
        self._state_digests: dict[str, bytes] = {}
        self._log_failed = False        # a session log write failed: the next write first catches the log up
        self._log_paused = False        # while a failed write is being reported: write nothing
        self._tally = CategoryTally()
        self._tool_defs = tools.definitions()
        self._system_tokens = estimate_text(system_prompt)
        self._tools_tokens = estimate_tools(self._tool_defs)
        self.memory_tokens = 0          # the memory files' part of the system prompt (factory: memory_files)
        self.mcp = mcp                  # the MCP servers (agent_core/mcp/hub.py), started with the first turn
        self.mcp_tokens: dict[str, int] = {}   # each MCP server's tool definitions, estimated
        self.on_tools_changed: list[Callable[[list[dict]], object]] = []   # the summarizer sends the same tools
        self._mcp_lock: asyncio.Lock | None = None
        self._mcp_notices: list[str] = []      # said at the next turn's start (a server that died while idle)
        self._changed: ChangedFiles | None = None   # changed_files(), made on first use
        self._request_tokens = 0        # the count of the request about to be sent (clamps max_tokens)
        self._request_estimate = 0      # the plain estimate of that request's messages (calibration)
        self._request_added: tuple[int, int] | None = None   # its anchor's usage, the estimate added since
        self.cache_watch = CacheWatch()   # why a request read short of the cache (the cache doctor)
        self.head_count: asyncio.Task | None = None   # count_tokens of the head, at session start
        self._compaction_started: float | None = None   # when the server began a compaction in this call
        # The count's confirmation by the API's count_tokens after a compaction, in the background;
        # `_count_gen` moves on with every new response or compaction, so a late one is dropped.
        self._count_gen = 0
        self.count_confirmation: asyncio.Task | None = None
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
        self.telemetry: Any = None      # agent_core/telemetry's sink (the factory), when a collector is set
        self._queue: asyncio.Queue | None = None
        self._apply_calibration()
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass              # built outside an event loop: the head is counted when the first turn starts
        else:
            self._count_head_later()

    # ----- state for front-ends -------------------------------------------------------------
    @property
    def info(self):
        return self.client.info

    @property
    def cache_ttl(self) -> str:
        """The prompt-cache TTL requests are written under (5m | 1h): /model prices a switch with it."""
        return self.pipeline.config.cache_ttl

    @property
    def busy(self) -> bool:
        return self._task is not None and not self._task.done()

    def tokens(self) -> int:
        """The count of what the next request would hold: the projected view (collapse replayed)."""
        return self.pipeline.view(self.entries)[1]

    def count_request(self, messages: list[dict]) -> int:
        """The calibrated count of a request of `messages` with the session's system prompt and tools
        (a summary request, sized before it is sent): the head as counted, the messages' estimates
        at the calibration."""
        cal = self.pipeline.config.count_ratio
        return self.pipeline.overhead_tokens + round(sum(
            estimate_message(m) * (cal.assistant if m.get("role") == "assistant" else cal.ratio) for m in messages))

    def context_event(self, tokens: int | None = None, view: list[Entry] | None = None) -> ev.ContextUpdate:
        """The context numbers now, from one projected view: the count and the categories (which sum
        to it exactly). `tokens` and `view` are the pipeline's own when it just ran; otherwise the
        view of the current history is replayed."""
        b = self.pipeline.budget
        if view is None or tokens is None:
            view, tokens = self.pipeline.view(self.entries)
        cats = breakdown(view, tally=self._tally, system_tokens=self._system_tokens,
                         tools_tokens=self._tools_tokens, memory_tokens=self.memory_tokens,
                         mcp_tokens=sum(self.mcp_tokens.values()),
                         window=b.context_window, threshold=b.autocompact_threshold,
                         autocompact_enabled=b.autocompact_enabled, total=tokens)
        return ev.context_update(b, tokens, cats, self._count_source(view), self.next_request(view, tokens).to_dict())

    @property
    def budget(self) -> ContextBudget:
        """The thresholds the session works within now."""
        return self.pipeline.budget

    def set_threshold(self, pct: float | None) -> ContextBudget:
        """Auto-compact at `pct` of the effective window from the next request on (None: the
        default). Raises ValueError, saying the bounds, outside them: above the blocking limit less
        a margin, or so low that the system prompt, the tools and a turn no longer fit under it."""
        old = self.pipeline.budget
        engine = self.engine
        if engine != "local":
            raise ValueError(f"the {engine} engine's compaction trigger is sent to the API from the session's start: "
                             f"start the session again with --autocompact-pct to move it")
        if not old.autocompact_enabled:
            raise ValueError("auto-compact is off in this session (--disable-autocompact or the policy): "
                             "there is no threshold to move")
        new = replace(old, autocompact_pct=pct)       # raises above the highest safe threshold
        lowest = self.pipeline.overhead_tokens + MIN_TURN_TOKENS
        if new.autocompact_threshold < lowest:
            raise ValueError(f"{pct:g}% puts the auto-compact threshold at {new.autocompact_threshold:,} tokens, under "
                             f"what the system prompt and tools take plus a minimal turn ({lowest:,}); with this "
                             f"window it must be at least {math.ceil(1000 * lowest / new.effective_window) / 10:g}%")
        self.pipeline.set_budget(new)
        return new

    def keep_threshold(self, pct: float | None) -> str:
        """Keep `pct` for this model in the user config file (`threshold_file`, set by the factory),
        so the next session on this model starts with it; where it went, or why it could not be."""
        path = self.threshold_file
        if path is None:
            return "for this session only (no user config file)"
        try:
            threshold_store.save(path, self.info.model, pct)
        except (OSError, ValueError) as e:
            return f"for this session only: could not save it in {path} ({e})"
        return (f"forgotten for {self.info.model} in {path}" if pct is None
                else f"kept for {self.info.model} in {path}")

    def context_status(self) -> dict:
        """The figures `context_status` reports: the context pane's and the cost pane's, now."""
        view, tokens = self.pipeline.view(self.entries)
        b = self.pipeline.budget
        nr = self.next_request(view, tokens)
        return {"tokens": tokens, "window": b.context_window, "threshold": b.autocompact_threshold,
                "state": b.state(tokens), "percent_left": round(b.percent_left(tokens), 1),
                "cost_usd": self.cost.event().total_usd, "cache_ttl": self.pipeline.config.cache_ttl,
                "cache_expires_in_s": nr.cache_expires_in_s, "cached_tokens": nr.cached_tokens,
                "uncached_tokens": nr.uncached_tokens}

    def next_request(self, view: list[Entry] | None = None, tokens: int | None = None) -> NextRequest:
        """What the next request holds and costs now, warm and cold, and the cache's time left."""
        if view is None or tokens is None:
            view, tokens = self.pipeline.view(self.entries)
        cfg = self.pipeline.config
        return next_request(view, self.pipeline.state, tokens=tokens, now=self.clock(), ttl=cfg.cache_ttl,
                            rates=cfg.cache_rates if cfg.cache_rates_known else None,
                            head_tokens=self.pipeline.overhead_tokens,
                            last_call_at=self._calls_span[1] if self._calls_span else None)

    def cost_event(self) -> ev.CostUpdate:
        return self.cost.event()

    def record_call(self, call: ev.ModelCall) -> None:
        """One finished model call (a turn's answer, or a summary the compaction engine asked
        for): booked in the cost book and kept in the session log as its own record."""
        self.cost.add(call.model, call.usage, call.purpose)
        self._api_s += max(0.0, float(call.duration_s or 0.0))
        now = self.clock()
        self._calls_span = (self._calls_span[0] if self._calls_span else now, now)
        self._log(lambda log: log.append_event(call.to_dict()))
        if self.telemetry is not None:
            self.telemetry(call)

    def live(self, e: ev.Event) -> None:
        """An event from outside the turn's own code (the summarizer's progress while it writes):
        passed on in the running turn's stream; dropped when no turn runs."""
        if self.busy and self._queue is not None:
            self._queue.put_nowait(e)

    def api_seconds(self) -> float:
        """The session's model calls added up (/cost's API time)."""
        return self.api_before + self._api_s

    def active_seconds(self) -> float:
        """Seconds between the session's first and latest model call, idle time between runs left out."""
        span = self._calls_span
        return self.active_before + (span[1] - span[0] if span else 0.0)

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

    def view(self) -> list[Entry]:
        """What the next request would hold: the projected view of the history (collapse replayed)."""
        return self.pipeline.view(self.entries)[0]

    def let_time_pass(self, text: str = "") -> Pause:
        """`/wait`: on the demo model, move the clock on (the demo installs `time_travel`). Raises
        PauseError, and moves nothing, on a real model, during a turn or for a bad duration."""
        if self.time_travel is None:
            raise real_model_error(self.pipeline.config.cache_ttl)
        return self.time_travel(text)

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
        async for e in self._drive(self._shell(command)):
            yield e

    def _shell(self, command: str) -> Callable[[asyncio.Queue], Awaitable[None]]:
        async def body(q: asyncio.Queue) -> None:
            try:
                done = await run_shell(valid_text(command), self.tool_ctx)
            except asyncio.CancelledError:
                self._emit(q, ev.ShellRan(command, "", cancelled=True))
                return
            try:
                entry = done.entry()
                self._append(entry)        # kept in memory on a failed write: the next one catches up
                if self.tool_ctx.history is not None:
                    self.tool_ctx.history.checkpoint(entry.uuid)
            finally:
                self._emit(q, ev.ShellRan(done.command, done.output, done.exit_code, done.is_error))
            self._log_state()
            self._context(q)
            if self._compact_after_tools:     # /compact while it ran: queued until now, as after a tool batch
                focus, self._compact_after_tools, self._compact_focus = self._compact_focus, False, None
                await self._compact_now(q, focus)

        async def guarded(q: asyncio.Queue) -> None:
            try:
                await body(q)
            except SessionWriteError as e:
                self._log_write_failed(q, e, lambda: None)
        return guarded

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
        if self.busy:
            self._task.cancel()

    def clear(self) -> None:
        """`/clear`: forget the conversation (the session log keeps it)."""
        self.entries = []
        self.context_history.clear()
        self._count_gen += 1
        try:
            self._log_history()
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
        self.entries = self.entries[:index]
        self._count_gen += 1
        self._log_history()
        self._log(lambda log: log.append_event(ev.Notice(
            f"Rewound to prompt {point.number}: {point.later_entries} entries left the working history "
            f"(this log keeps them).").to_dict()))
        return point.text

    def file_plan(self, index: int) -> list[Restore] | None:
        """What rewinding to the prompt at `index` would put back in the workspace (file_restore.py):
        each file the agent's tools changed since, with its diff; None when that is not known."""
        history = self.tool_ctx.history
        if history is None or not 0 <= index < len(self.entries):
            return None
        return restore_plan(history, self.entries[index].uuid)

    def restore_files(self, plan: list[Restore]) -> list[str]:
        """Put the plan's files back (after the user saw its diff); a line per file, also logged."""
        if self.busy:
            raise ValueError("A turn is running: press Esc first, then rewind.")
        assert self.tool_ctx.history is not None
        lines = apply_restore(plan, self.tool_ctx, self.tool_ctx.history)
        if lines:
            self._log(lambda log: log.append_event(ev.Notice("Files restored by /rewind: " + "; ".join(lines))
                                                   .to_dict()))
        return lines

    def changed_files(self) -> ChangedFiles | None:
        """The files this session's write and edit calls changed, with lines added and removed."""
        history = self.tool_ctx.history
        if history is None:
            return None
        if self._changed is None:
            self._changed = ChangedFiles(history)
        return self._changed

    def _say_history_trouble(self, q: asyncio.Queue) -> None:
        """A copy the file history could not keep (a full disk): said once per failure, since that
        change cannot be restored by /rewind."""
        history = self.tool_ctx.history
        if history is not None and history.write_error:
            problem, history.write_error = history.write_error, None
            self._emit(q, ev.Notice(f"File history: {problem}; /rewind cannot restore that change."))

    def session_diff(self) -> str:
        """`/diff`: every changed file from before the session to now ('' when nothing changed)."""
        history = self.tool_ctx.history
        return session_diff(history) if history is not None else ""

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
                self._use_tools()
            return notices

    def _use_tools(self) -> None:
        self._tool_defs = self.tools.definitions()
        self._tools_tokens = estimate_tools(self._tool_defs)
        by_server: dict[str, int] = {}
        for t in self.mcp.tools if self.mcp is not None else ():
            by_server[t.server] = by_server.get(t.server, 0) + estimate_tools([t.definition()])
        self.mcp_tokens = by_server
        for hook in self.on_tools_changed:
            hook(self._tool_defs)
        if self.head_count is not None:       # counted without these tools: count the head again
            self.head_count.cancel()
            self.head_count = None
        self._apply_calibration()

    def _mcp_died(self, notice: str) -> None:
        if self.busy:
            self.live(ev.Notice(notice))
        else:
            self._mcp_notices.append(notice)

    @property
    def sandbox(self):
        """The OS sandbox bash runs in (agent_core/os_sandbox): /sandbox and the status line read it."""
        return self.tool_ctx.os_sandbox

    def mcp_status(self) -> list:
        """Each MCP server's state and tools (/mcp, /context); empty without servers."""
        return self.mcp.status() if self.mcp is not None else []

    async def aclose(self) -> None:
        self.cancel()
        if self.count_confirmation is not None:
            self.count_confirmation.cancel()
        if self.head_count is not None:
            self.head_count.cancel()
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
    async def _drive(self, body: Callable[[asyncio.Queue], Awaitable[None]]) -> AsyncIterator[ev.Event]:
        if self.busy:
            yield ev.Error("busy", "A turn is already running; wait for it or press Esc to cancel it.")
            return
        queue: asyncio.Queue = asyncio.Queue()
        self._queue = queue
        done = object()

        # The end is signalled when the task is done, not from a `finally` in it: a task cancelled
        # before its first step (an Esc or ACP cancel right after the prompt) never runs its body.
        self._task = asyncio.create_task(body(queue))
        self._task.add_done_callback(lambda _task: queue.put_nowait(done))
        try:
            while True:
                item = await queue.get()
                if item is done:
                    break
                yield item
        finally:
            if not self._task.done():
                self._task.cancel()
            try:
                await self._task
            except BaseException:
                pass

    def _emit(self, q: asyncio.Queue, e: ev.Event) -> None:
        if e.logged:
            self._log(lambda log: log.append_event(e.to_dict()))
        q.put_nowait(e)
        if self.telemetry is not None:
            self.telemetry(e)

    def _append(self, entry: Entry) -> None:
        entry = valid_entry(entry)   # text that cannot be encoded would break every later request
        self.entries.append(entry)
        self._log(lambda log: log.append_entry(entry), history=True)

    def _log(self, write: Callable[[SessionRecorder], object], *, history: bool = False) -> bool:
        """Write to the session log; False when nothing was written. A failed write (disk full)
        raises SessionWriteError, which ends the turn with an Error event; the log is left a
        whole prefix of the history, and the next write first brings it level again (`history`:
        the write is of the history, which that catching up already wrote)."""
        if self._log_paused:
            return False
        try:
            if self._log_failed:
                self.session.sync(self.entries)
                self._log_failed = False
                self._state_digests.clear()
                if history:
                    return True   # the sync wrote it
            write(self.session)
            return True
        except SessionWriteError:
            self._log_failed = True
            raise

    def _adopt(self, new_entries: list[Entry]) -> None:
        if new_entries is self.entries:
            return
        if len(new_entries) == len(self.entries) and all(a is b for a, b in zip(new_entries, self.entries)):
            return
        self.entries = list(new_entries)
        self._log_history()

    def _log_history(self) -> None:
        self._log(lambda log: log.append_history(self.entries), history=True)

    def _log_state(self) -> None:
        """Snapshot what resume needs; only the parts that changed since the last snapshot are
        written (the log merges snapshots by key), so a quiet turn writes nothing."""
        parts = {"pipeline": self.pipeline.snapshot(), "cost": self.cost.to_dict(),
                 "permissions": self.permissions.to_dict(), "turns": self.turns,
                 "context_history": [list(p) for p in self.context_history[-PLOT_POINTS:]],
                 "active_s": round(self.active_seconds(), 3), "api_s": round(self.api_seconds(), 3),
                 "last_request": self.cache_watch.state()}
        changed, digests = {}, {}
        for key, value in parts.items():
            digest = hashlib.blake2b(json.dumps(value, sort_keys=True, default=str).encode(), digest_size=16).digest()
            if self._state_digests.get(key) != digest:
                digests[key] = digest
                changed[key] = value
        if changed and self._log(lambda log: log.append_state(changed)):
            self._state_digests.update(digests)

    def _report_events(self, q: asyncio.Queue, reports: list[CompactionReport],
                       before: list[Entry] | None = None) -> bool:
        """One event per report. `before`: the history the run started from; the run's last
        compaction carries what it changed (`parts`), for the inspector."""
        compacted = False
        acted = [r for r in reports if r.layer != "breaker" and not r.details.get("failed")]
        for r in reports:
            if r.layer == "breaker":
                self._emit(q, ev.BreakerTripped(breaker=r.trigger, reason=r.action))
                continue
            if r.details.get("failed"):
                self._emit(q, ev.Error("compaction", r.action, retryable=True))
                continue
            c = ev.Compaction(layer=r.layer, trigger=r.trigger, tokens_before=r.tokens_before,
                              tokens_after=r.tokens_after, duration_s=round(r.duration_s, 4),
                              transcript_path=r.transcript_path, action=r.action, timestamp=clock.now(),
                              cache=_cache_figures(r.details),
                              usage=dict(r.details["usage"]) if isinstance(r.details.get("usage"), dict) else None)
            if before is not None and r is acted[-1]:
                c.parts = self._parts(before, [a.layer for a in acted])
            self._keep_compaction(c)
            self._emit(q, c)
            compacted = True
        if compacted:   # a confirmation still on its way counted the history before this one
            self._count_gen += 1
        return compacted

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
        return tokens if self._say_early(q, tokens, view, budget.warning_threshold) else None

    def _say_summary_figure(self, res: PipelineResult) -> None:
        """The pipeline is about to summarize at the auto-compact threshold: say the count it acts on
        (after the cheap layers), so the gauge shows AUTO-COMPACT while the summary is written."""
        if self._queue is not None:
            self._say_early(self._queue, res.tokens, res.view, self.pipeline.budget.autocompact_threshold)

    def _say_early(self, q: asyncio.Queue, tokens: int, view: list[Entry], low: int) -> bool:
        """Say a figure before the pipeline's result when it is at least `low`, below the blocking
        limit (blocking means nothing is sent, which only the figure after the pipeline can tell) and
        not the figure said last. True when said."""
        if not low <= tokens < self.pipeline.budget.blocking_limit:
            return False
        if self.context_history and self.context_history[-1][1] == tokens:
            return False
        self._context(q, tokens=tokens, view=view)
        return True

    def _context(self, q: asyncio.Queue, compacted: bool = False, tokens: int | None = None,
                 view: list[Entry] | None = None) -> ev.ContextUpdate:
        c = self.context_event(tokens, view)
        self.context_history.append((self.turns, c.tokens, compacted))
        self._emit(q, c)
        return c

    def _finish(self, q: asyncio.Queue, reason: str) -> None:
        self._log_state()
        self._emit(q, ev.TurnFinished(stop_reason=reason, turns=self.turns))

    def _turn(self, prompt: str) -> Callable[[asyncio.Queue], Awaitable[None]]:
        async def body(q: asyncio.Queue) -> None:
            turn = _Turn()
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

    def _log_write_failed(self, q: asyncio.Queue, e: SessionWriteError, repair: Callable[[], None]) -> None:
        """End the turn on a failed log write: the history in memory is repaired (not logged, the
        log keeps its last whole line and is repaired on resume) and the user told what to do."""
        self._log_paused = True
        try:
            repair()
            self._emit(q, ev.Error("session_log", str(e)))
            self._finish(q, "error")
        finally:
            self._log_paused = False

    def _repair_after_cancel(self, turn: _Turn) -> None:
        """Keep what was done; answer unanswered tool calls so the history stays valid. Runs at
        most once per turn (a failed log write can interrupt it and call it again)."""
        pending, partial = turn.pending_tool_uses, "".join(turn.partial_text)
        turn.pending_tool_uses, turn.partial_text = [], []
        if pending:
            blocks = []
            for tu in pending:
                blocks.append(turn.done_results.get(tu["id"]) or
                              tool_result_block(tu["id"], CANCELLED_RESULT, is_error=True))
            self._append(Entry({"role": "user", "content": blocks}))
        elif partial.strip():
            self._append(Entry({"role": "assistant", "content": [
                {"type": "text", "text": partial}]}, meta={"cancelled": True}))

    async def _turn_body(self, prompt: str, q: asyncio.Queue, turn: _Turn) -> None:
        """Model calls and tool batches until the model stops asking for tools, a limit is hit
        or a call fails for good; every way out ends with TurnFinished."""
        prompt = valid_text(prompt)   # e.g. undecodable stdin: it must encode, in the request and the log
        self.turns += 1
        mentioned = await mention_entry(prompt, self.tool_ctx)   # the files it @-mentions, attached
        self._append(mentioned.entry)
        if self.tool_ctx.history is not None:
            self.tool_ctx.history.checkpoint(mentioned.entry.uuid)   # what /rewind can put back
        self._emit(q, ev.TurnStarted(turn=self.turns, prompt=prompt))
        for said in mentioned.events:
            self._emit(q, said)
        for notice in await self.start_mcp() + self._mcp_notices:
            self._emit(q, ev.Notice(notice))
        self._mcp_notices = []
        await self._head_counted()
        while True:
            stop = self._over_limit(q, turn)
            if stop:
                return self._finish(q, stop)
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
            await self._run_tools(tool_uses, q, turn)
            self._say_history_trouble(q)
            self._log_state()
            if self._compact_after_tools:
                focus, self._compact_after_tools, self._compact_focus = self._compact_focus, False, None
                await self._compact_now(q, focus)

    def _over_limit(self, q: asyncio.Queue, turn: _Turn) -> str | None:
        """The stop reason when --max-turns or --max-budget-usd is reached (said as an Error)."""
        if self.limits.max_turns is not None and turn.calls >= self.limits.max_turns:
            self._emit(q, ev.Error("max_turns", f"Stopped after {turn.calls} model calls (--max-turns)."))
            return "max_turns"
        total = self.cost.total_usd
        if self.limits.max_budget_usd is not None and total is not None and total >= self.limits.max_budget_usd:
            self._emit(q, ev.Error("budget", f"Stopped: the session cost ${total:.4f} reached the budget of "
                                             f"${self.limits.max_budget_usd:.4f} (--max-budget-usd)."))
            return "budget"
        return None

    async def _compacted_request(self, q: asyncio.Queue) -> list[dict] | None:
        """Run the pipeline over the history and return the messages to send; None when the
        context is at the blocking limit (said as an Error)."""
        said = self._say_figure_before_pipeline(q)
        res = await self.pipeline.run(self.entries)
        self._request_tokens = res.tokens
        self._request_estimate = sum(e.tokens for e in res.view)
        self._request_added = _added_since_usage(res.view)
        before = self.entries
        self._adopt(res.entries)
        compacted = self._report_events(q, res.reports, before)
        if compacted or res.tokens != said:     # the figure just said is still the figure
            self._context(q, compacted, tokens=res.tokens, view=res.view)
        if compacted:
            self._confirm_count_later(res.request, res.view)
        blocked = self.pipeline.blocked(res.tokens, res.view)
        if blocked:
            self._emit(q, ev.Error("blocking", blocked))
            return None
        return res.request

    async def _recovered(self, q: asyncio.Queue, e: ModelError, turn: _Turn) -> bool:
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

    def _record_answer(self, q: asyncio.Queue, response: ModelResponse, turn: _Turn) -> list[dict]:
        """Add the answer to the history and the cost book; returns the tool calls it asks for."""
        turn.calls += 1
        turn.partial_text.clear()
        outcome = self._server_outcome(response)
        meta: dict = {"model": response.model}
        if outcome is not None and outcome.acted:
            meta["server_edits"] = [c.layer for c in outcome.clears] + (
                [SERVER_COMPACT_LAYER] if outcome.compacted else [])
        # A pause after a compaction reports no sampling step: its usage says nothing about the size
        # of the context, so the count estimates that answer instead of anchoring on it.
        paused = response.stop_reason == "compaction" and (outcome is None or outcome.message_usage is None)
        odd = response.usage.get(NOT_BELIEVABLE)    # usage_to_dict zeroed it: said, and the count estimates
        if odd:
            self._emit(q, ev.Notice(str(odd)))
        self._append(Entry({"role": "assistant", "content": response.content}, response_id=response.id,
                           usage=None if paused or odd else response.usage, meta=meta))
        if not paused and (outcome is None or not outcome.acted) and response.usage:
            u = response.usage   # the server's count of the request just sent, against its estimate
            served = sum(int(u.get(k) or 0) for k in ("input_tokens", "cache_creation_input_tokens",
                                                      "cache_read_input_tokens"))
            self._learn_answer_ratio(int(u.get("output_tokens") or 0), self.entries[-1])
            added = self._request_added
            if added is not None and added[1] >= CALIBRATE_MIN_ESTIMATE:
                self._learn_ratio(served - added[0], added[1], marginal=True)
            else:
                self._learn_ratio(served, self._request_estimate)
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
        if outcome is not None and outcome.ignored:
            self._emit(q, ev.Notice(ignored_notice(outcome.ignored)))
        compacted = self._server_compactions(q, outcome, response) if outcome is not None else False
        self._count_gen += 1
        self._context(q, compacted)
        return [b for b in response.content if b.get("type") == "tool_use"]

    @staticmethod
    def _server_outcome(response: ModelResponse) -> ServerOutcome | None:
        """What the server did to the context for this answer (server and hybrid engines)."""
        if response.server is None and not any(b.get("type") == COMPACTION_BLOCK for b in response.content):
            return None
        return read_outcome(response.content, response.server)

    def _server_compactions(self, q: asyncio.Queue, outcome: ServerOutcome, response: ModelResponse) -> bool:
        """The server's edits and compaction as compaction events like ours; a compaction block
        replaces the history it summarizes (the answer holding it is the newest entry)."""
        acted = False
        for c in clear_events(outcome, response.usage):
            self._keep_compaction(c)
            self._emit(q, c)
            acted = True
        if outcome.compaction_index is None:
            return acted
        if outcome.compaction_failed:
            self._emit(q, ev.Error("compaction", FAILED_COMPACTION, retryable=True))
            return acted
        before, tokens_before = self.entries, self._request_tokens
        started = self._compaction_started or time.time()
        self._compaction_started = None
        new = without_summarized(self.entries, len(self.entries) - 1, tokens_before, 0)
        tokens_after = self.pipeline.view(new)[1]
        new[0] = new[0].with_meta(tokens_after=tokens_after)
        self._adopt(new)
        c = compact_event(outcome, tokens_before, tokens_after, time.time() - started)
        c.parts = self._parts(before, [c.layer])
        self._keep_compaction(c)
        self._emit(q, c)
        return True

    def _parts(self, before: list[Entry], layers: list[str]) -> dict:
        """What a compaction changed (`compaction_parts`) and what it lost for the user
        (`loss_report`: against what the next request shows, collapsed spans hidden)."""
        parts = compaction_parts(before, self.entries, layers)
        parts["loss"] = loss_report(before, self.pipeline.view(self.entries)[0])
        return parts

    def _keep_compaction(self, c: ev.Compaction) -> None:
        """Keep a compaction for the timeline and inspector; older ones' parts go compressed."""
        self.compactions.append(c)
        self.cache_watch.rewritten = True
        pack_older(self.compactions[-PARTS_LIVE - 1:])

    def _count_source(self, view: list[Entry]) -> str:
        """Where the count of `view` comes from, read from the history and the pipeline state alone
        (so a resumed session says the same): `counted` when count_tokens confirmed it, `usage` when
        it is anchored on a response's usage that no layer has shifted since, else `estimate`."""
        i = anchor_index(view)
        if i is not None:
            # The working history's anchor says whether it was counted since a layer last shifted it;
            # the view's (collapse shifts it there alone) whether an estimate shifted it.
            w = anchor_index(self.entries)
            meta = self.entries[w].meta if w is not None else {}
            if "counted_adjust" in meta and meta["counted_adjust"] == meta.get("usage_adjust", 0):
                return "counted"
            if view[i].meta.get("usage_adjust"):
                return "estimate"
            # `server`: the usage of an answer the server's own edits or compaction shaped.
            return "server" if view[i].meta.get("server_edits") else "usage"
        end = (self.pipeline.recalled(COUNTED) or {}).get("view_end")
        return "counted" if end is not None and any(e.uuid == end for e in view) else "estimate"

    # ----- calibration (docs/engine.md, "Counting") -------------------------------------------
    def _apply_calibration(self) -> None:
        """Hand the pipeline what the server's counts taught: the ratio its estimates are counted
        at, and the head (system prompt and tools) in server tokens: counted by count_tokens, else
        the head's estimate at the ratio (with what a confirmation before any answer corrected)."""
        saved = self.pipeline.recalled(COUNTED) or {}
        ratio, head = _positive(saved.get("ratio")), saved.get("head")
        answers = _positive(saved.get("answers_real")), _positive(saved.get("answers_estimate"))
        assistant = None
        if ratio is not None and answers[0] and answers[1] and answers[1] >= CALIBRATE_MIN_ANSWERS:
            lo, hi = CALIBRATION_BOUNDS
            assistant = min(hi, max(lo, answers[0] / answers[1]))
        self.pipeline.set_calibration(ratio, assistant)
        adjust = saved.get("overhead_adjust", 0)
        adjust = adjust if isinstance(adjust, int) and not isinstance(adjust, bool) else 0
        if self._head_known(saved):
            self.pipeline.set_overhead(head + adjust)
        else:
            self.pipeline.set_overhead(round((ratio or 1.0) * (self._system_tokens + self._tools_tokens)) + adjust)

    def _head_known(self, saved: dict) -> bool:
        """Whether the saved head count is of this head (a resumed session's system prompt or tools
        may have changed since it was counted)."""
        head = saved.get("head")
        return (isinstance(head, int) and not isinstance(head, bool) and head > 0
                and saved.get("head_estimate") == self._system_tokens + self._tools_tokens)

    def _learn_ratio(self, server_tokens: int, estimate: int, marginal: bool = False) -> None:
        """A request the server counted. `marginal`: `server_tokens` is what it counted for what was
        added since the last response (the usage anchor's own count taken out) and `estimate` what
        ctxtui estimated for that: the ratio of the content a session adds and its layers remove
        (tool results, answers), preferred once known. Otherwise `server_tokens` is the whole
        request and `estimate` its messages: the ratio of the whole (the head's count taken out,
        or the head's estimate put in before it is counted), used until a marginal one is learnt."""
        if self.client.info.offline:
            return   # the demo model counts with the estimator itself: nothing to learn
        saved = self.pipeline.recalled(COUNTED) or {}
        if not marginal and saved.get("ratio_from") == "added":
            return
        head = saved.get("head")
        if marginal:
            real, est = server_tokens, estimate
        elif self._head_known(saved):
            real, est = server_tokens - head, estimate
        else:
            real, est = server_tokens, estimate + self._system_tokens + self._tools_tokens
        if estimate < CALIBRATE_MIN_ESTIMATE or real <= 0:
            return
        lo, hi = CALIBRATION_BOUNDS
        ratio = round(min(hi, max(lo, real / est)), 4)
        if ratio != saved.get("ratio"):
            self.pipeline.remember(COUNTED, {"ratio": ratio, "ratio_from": "added" if marginal else "request"})
            self._apply_calibration()

    def _learn_answer_ratio(self, output_tokens: int, answer: Entry) -> None:
        """An answer's output tokens against its estimate (less the message's own overhead, which
        output does not count): the rate answers are counted at, kept with the ratio."""
        est = answer.tokens - MESSAGE_OVERHEAD
        if self.client.info.offline or output_tokens <= 0 or est <= 0:
            return
        saved = self.pipeline.recalled(COUNTED) or {}
        real = (_positive(saved.get("answers_real")) or 0.0) * ANSWERS_DECAY + output_tokens
        est_sum = (_positive(saved.get("answers_estimate")) or 0.0) * ANSWERS_DECAY + est
        self.pipeline.remember(COUNTED, {"answers_real": round(real, 1), "answers_estimate": round(est_sum, 1)})
        self._apply_calibration()

    def _count_head_later(self) -> None:
        """With a real API and no counted head yet: count the system prompt and the tools with the
        free count_tokens endpoint, in the background, once a session."""
        if self.client.info.offline or self.head_count is not None:
            return
        if self._head_known(self.pipeline.recalled(COUNTED) or {}):
            return
        self.head_count = asyncio.get_running_loop().create_task(self._count_head())

    async def _count_head(self) -> None:
        estimate = self._system_tokens + self._tools_tokens   # of the head counted (MCP tools may come later)
        counted = await self.client.count_tokens(system=self.system_prompt, messages=HEAD_PROBE, tools=self._tool_defs)
        if counted is None:
            return   # the estimate stands (the API could not count)
        probe = round(self.pipeline.config.count_ratio.ratio * estimate_message(HEAD_PROBE[0]))
        self.pipeline.remember(COUNTED, {"head": max(1, counted - probe), "overhead_adjust": 0,
                                         "head_estimate": estimate})
        self._apply_calibration()

    async def _head_counted(self) -> None:
        """Before the session's first call: let the head's count land (at most HEAD_WAIT_S)."""
        self._count_head_later()
        task = self.head_count
        if task is None or task.done():
            return
        try:
            await asyncio.wait_for(asyncio.shield(task), HEAD_WAIT_S)
        except (asyncio.TimeoutError, Exception):
            pass   # a count that is late or failed leaves the estimate; the first usage corrects it

    def _confirm_count_later(self, request: list[dict], view: list[Entry]) -> None:
        """After a compaction, with a real API: count the new request (`view` projected) with the
        free count_tokens endpoint in the background (never awaited by the turn), learn the
        calibration from it and re-anchor the count on it."""
        if self.client.info.offline:
            return
        if self.count_confirmation is not None:
            self.count_confirmation.cancel()
        self.count_confirmation = asyncio.get_running_loop().create_task(
            self._confirm_count(request, view, self._count_gen))

    async def _confirm_count(self, request: list[dict], view: list[Entry], gen: int) -> None:
        counted = await self.client.count_tokens(system=self.system_prompt, messages=request, tools=self._tool_defs)
        if counted is None or gen != self._count_gen:
            return   # the API could not count (a confirmation only), or a response or compaction came since
        self._learn_ratio(counted, sum(e.tokens for e in view))
        delta = counted - self.pipeline.count(view)   # what the calibrated count still misses
        i = anchor_index(self.entries)
        try:
            if i is not None:      # shift the usage anchor: the count of that request is now the API's
                entries = adjust_anchor(self.entries, delta, i, real=True)
                a = entries[i]
                entries[i] = a.with_meta(counted_adjust=int(a.meta.get("usage_adjust", 0)))
                self._adopt(entries)
            else:                  # no response since: what the estimate missed sits with the overhead
                adjust = int((self.pipeline.recalled(COUNTED) or {}).get("overhead_adjust", 0)) + delta
                self.pipeline.remember(COUNTED, {"overhead_adjust": adjust,
                                                 "view_end": self.entries[-1].uuid if self.entries else None})
                self._apply_calibration()
            c = self.context_event()
            if self.busy and self._queue is not None:
                self._queue.put_nowait(c)
            elif self.on_context is not None:
                self.on_context(c)
            if not self.busy:
                self._log_state()
        except SessionWriteError:
            pass   # the next write of the turn catches the log up, or reports it

    def _max_tokens(self, turn: _Turn) -> int:
        """The model's max output, lowered so the request's count + max_tokens fits the window; when
        not even a small floor fits, or the count (with what the API said it counts above it) is at
        the blocking limit, the request is too long (raised as the API would say it: nothing sent)."""
        b = self.pipeline.budget
        n = self._request_tokens + turn.undercount
        floor = min(OUTPUT_FLOOR, b.reserve)
        room = output_room(b.context_window, self.client.info.max_output_tokens, n, floor)
        if room is None and self.pipeline.api_judges:
            return floor   # the server shrinks the request first, or the policy is reactive: the API judges
        if room is None:
            raise ModelError("prompt_too_long", f"The request (about {n:,} tokens) leaves no room for an answer "
                                                f"in the {b.context_window:,}-token window; nothing was sent. "
                                                "Run /compact.")
        # counted over the window (what the API said it counts above the estimate included): never sent
        if n >= b.blocking_limit and not self.pipeline.api_judges:
            raise ModelError("prompt_too_long", f"The request, counted at about {n:,} tokens with what the API "
                                                f"counted above the estimate, is at or above the blocking limit of "
                                                f"{b.blocking_limit:,} (window {b.context_window:,}); nothing was "
                                                "sent. Run /compact.")
        # The count is an estimate: keep a margin of its usual error, so the API rarely has to say so.
        margin = math.ceil(ESTIMATE_MARGIN * self._request_tokens)
        return min(room, max(floor, b.context_window - n - margin))

    def _refitted(self, q: asyncio.Queue, e: ModelError, turn: _Turn) -> bool:
        """The API counted more than the estimate and refused input + max_tokens over the window:
        send once more with the room it says is left (no compaction) when that room is enough. A
        window it names that is smaller than ours is ours from now on (server_window.py)."""
        over = parse_max_tokens_over_window(e.message) if e.kind == "prompt_too_long" else None
        if over is None or turn.refit_used:
            return False
        counted, _asked, window = over
        turn.refit_used = True
        self._adopt_server_window(q, window)
        b = self.pipeline.budget
        # What the API counted above the estimate, plus any window it has that is smaller than ours.
        turn.undercount = max(0, counted - self._request_tokens) + max(0, b.context_window - window)
        return output_room(b.context_window, self.client.info.max_output_tokens,
                           self._request_tokens + turn.undercount, min(OUTPUT_FLOOR, b.reserve)) is not None

    def _adopt_server_window(self, q: asyncio.Queue, window: int) -> bool:
        """Work within the API's smaller window for the rest of the session (said once)."""
        notice = server_window.adopt(self.pipeline, self.client, self.tool_ctx, window)
        if notice is None:
            return False
        self._emit(q, ev.Notice(notice))
        return True

    async def _compact_to_fit(self, q: asyncio.Queue, e: ModelError, turn: _Turn) -> bool:
        """The one compaction after "prompt too long", sized by the numbers the refusal gives
        ("N tokens > M maximum"): a maximum below our window becomes the session's window first,
        so the stages keep what fits it; and the compaction aims low by however much the server
        counted more than the estimate of the same request, so the retry fits once it is counted.
        A first pass that shrinks but still leaves the retry over the auto-compact threshold is
        followed by a second one (a summary in place of the notes, say). True: send again."""
        parsed = parse_prompt_too_long(e.message)
        ratio = 1.0
        if parsed is not None:
            server_tokens, maximum = parsed
            self._adopt_server_window(q, maximum)
            ratio = server_window.count_ratio(server_tokens, self._request_tokens)
        budget = self.pipeline.budget
        self.pipeline.set_budget(server_window.fit_budget(budget, ratio))
        try:
            out = await self.pipeline.compact(self.entries, trigger="reactive")
            before = self.entries
            self._adopt(out.entries)
            compacted = self._report_events(q, out.reports, before)
            if compacted and out.tokens * ratio >= budget.autocompact_threshold:
                again = await self.pipeline.compact(self.entries, trigger="reactive")
                before = self.entries
                self._adopt(again.entries)
                if self._report_events(q, again.reports, before):
                    out = again
        finally:
            self.pipeline.set_budget(budget)
        if not compacted:
            why = self.pipeline.auto_compact_stopped() or "compaction could not shrink the history"
            self._emit(q, ev.Error("prompt_too_long", f"{e.message} Compaction did not help ({why}). "
                                                      "Run /compact with a focus, or /clear."))
            return False
        # The server counts this history higher than the estimate, by the same ratio: the retry's
        # max_tokens leaves room for that (an earlier refit's figure belonged to the longer request).
        turn.undercount = math.ceil(out.tokens * (ratio - 1.0))
        self._context(q, True, tokens=out.tokens, view=out.view)
        self._confirm_count_later(out.request, out.view)
        return True

    async def _call_model(self, request: list[dict], q: asyncio.Queue, turn: _Turn) -> ModelResponse:
        started = time.monotonic()
        response: ModelResponse | None = None
        self.cache_watch.sending(model=self.client.info.model, at=self.clock(), ttl=self.pipeline.config.cache_ttl,
                                 tools=self._tool_defs, system=self.system_prompt, messages=request,
                                 head_tokens=(self._tools_tokens, self._system_tokens))
        async for item in self.client.stream(system=self.system_prompt, messages=request, tools=self._tool_defs,
                                             max_tokens=self._max_tokens(turn), purpose="main"):
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

    async def _run_tools(self, tool_uses: list[dict], q: asyncio.Queue, turn: _Turn) -> None:
        turn.pending_tool_uses = tool_uses
        turn.done_results = {}
        allowed: list[dict] = []
        for tu in tool_uses:
            self._emit(q, ev.ToolCall(id=tu["id"], name=tu["name"], input=tu.get("input") or {}))
            decision = await self.permissions.check(tu["name"], tu.get("input") or {}, self._asker(q),
                                                    request_id=tu["id"])
            if decision.allowed:
                allowed.append(tu)
            else:
                msg = decision.message or f"Permission to run {tu['name']} was denied."
                turn.done_results[tu["id"]] = tool_result_block(tu["id"], msg, is_error=True)
                self._emit(q, ev.ToolResult(id=tu["id"], name=tu["name"], preview=msg[:500], size=len(msg),
                                            is_error=True))

        async def one(tu: dict) -> None:
            out = await self.tools.execute(tu["name"], tu.get("input") or {}, self.tool_ctx)
            content = valid_text(out.content or "")   # a file name that is not UTF-8, say
            turn.done_results[tu["id"]] = tool_result_block(tu["id"], content or "(no output)",
                                                            is_error=out.is_error)
            self._emit(q, ev.ToolResult(id=tu["id"], name=tu["name"], preview=content[:500],
                                        size=len(content), is_error=out.is_error))
            if out.meta.get("compact_requested"):
                self._compact_after_tools, self._compact_focus = True, out.meta.get("focus")

        await asyncio.gather(*(one(tu) for tu in allowed))
        blocks = [turn.done_results[tu["id"]] for tu in tool_uses]
        turn.pending_tool_uses = []
        self._append(Entry({"role": "user", "content": blocks}))

    def _asker(self, q: asyncio.Queue) -> Ask | None:
        """How the policy asks: the request goes out with the other events and the front-end
        answers on the request itself. None when no one is there to answer."""
        if not self.interactive:
            return None

        async def ask(req: ev.PermissionRequest) -> str:
            self._emit(q, req)
            return await req.reply
        return ask

    def _manual_compact(self, focus: str | None) -> Callable[[asyncio.Queue], Awaitable[None]]:
        async def body(q: asyncio.Queue) -> None:
            try:
                try:
                    await self._compact_now(q, focus)
                except asyncio.CancelledError:
                    self._emit(q, ev.Notice("Compaction cancelled; the history is unchanged."))
                self._log_state()
                self._emit(q, ev.TurnFinished(stop_reason="compacted", turns=self.turns))
            except SessionWriteError as e:
                self._log_write_failed(q, e, lambda: None)
        return body

    async def _compact_now(self, q: asyncio.Queue, focus: str | None) -> None:
        if not any(e.sent for e in self.entries):
            self._emit(q, ev.Notice("Nothing to compact yet."))
            return
        before = self.tokens()
        started = time.monotonic()
        out = await self.pipeline.compact(self.entries, trigger="manual", instructions=focus)
        old = self.entries
        self._adopt(out.entries)
        compacted = self._report_events(q, out.reports, old)
        if not compacted:
            self._emit(q, ev.Notice(f"Compaction did not shrink the context ({before:,} tokens); history kept "
                                    f"({time.monotonic() - started:.1f}s)."))
        self._context(q, compacted)
        if compacted:
            self._confirm_count_later(out.request, out.view)
        self._emit(q, self.cost.event())
