"""One user turn: model calls and tool batches until the model stops asking for tools, a limit is
hit or a call fails for good (the whole path: docs/architecture.md, "The flow of one prompt").

`TurnRunner` works with the session's parts, handed to it explicitly (`LoopParts`): it changes the
history through `History`, says everything through `Emitter`, and learns the count through
`Counter`. The agent drives it in a task and repairs the history when that task is cancelled.
"""
from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Awaitable, Callable

from compaction import Entry, Pipeline
from compaction.entry import tool_result_block

from agent_core import events as ev
from agent_core.loop import compaction_runs, server_window
from agent_core.loop.cache_watch import CacheWatch
from agent_core.loop.cancelled import CANCELLED_RESULT
from agent_core.loop.compaction_events import parts_of
from agent_core.loop.counting import Counter, added_since_usage
from agent_core.loop.emitter import Emitter
from agent_core.loop.history import History
from agent_core.loop.request_head import RequestHead
from agent_core.loop.seams import Ask, CostBook, Permissions, Tools
from agent_core.loop.server_engine import answer_meta, outcome_of, paused_after_compaction, server_compaction
from agent_core.loop.session_files import SessionFiles
from agent_core.loop.shell_input import run_shell
from agent_core.loop.tool_batch import run_batch
from agent_core.loop.turn_state import MID_STREAM_RETRIES, TurnLimits, TurnState, max_tokens, over_limit, refit_room
from agent_core.mentions.attach import mention_entry
from agent_core.providers.anthropic_client import NOT_BELIEVABLE
from agent_core.providers.errors import parse_max_tokens_over_window
from agent_core.providers.model import ModelClient, ModelError, ModelResponse
from agent_core.providers.server_context import ignored_notice
from agent_core.sessions.valid_text import valid_text
from agent_core.tools.base import ToolContext


@dataclass
class CompactQueue:
    """`/compact` while a turn runs, or the compact tool: run once the tool batch is done."""
    queued: bool = False
    focus: str | None = None

    def ask(self, focus: str | None) -> None:
        self.queued, self.focus = True, focus


@dataclass
class LastRequest:
    """The request about to be sent: its count (clamps max_tokens), the plain estimate of its
    messages and its anchor's usage with the estimate added since (calibration)."""
    tokens: int = 0
    estimate: int = 0
    added: tuple[int, int] | None = None
    compaction_started: float | None = None   # when the server began a compaction in this call


@dataclass
class LoopParts:
    """The session's parts a turn works with. `record_call` books a model call, `start_mcp` starts
    the MCP servers once (their notices), `confirm_later` counts a request in the background."""
    client: ModelClient
    pipeline: Pipeline
    tools: Tools
    tool_ctx: ToolContext
    permissions: Permissions
    cost: CostBook
    head: RequestHead
    counter: Counter
    history: History
    files: SessionFiles
    cache_watch: CacheWatch
    out: Emitter
    limits: TurnLimits
    interactive: bool
    now: Callable[[], float]
    record_call: Callable[[ev.ModelCall], None]
    start_mcp: Callable[[], Awaitable[list[str]]]
    confirm_later: Callable[[list[dict], list[Entry]], None]
    compact_queue: CompactQueue = field(default_factory=CompactQueue)
    last: LastRequest = field(default_factory=LastRequest)
    mcp_notices: list[str] = field(default_factory=list)   # said at the next turn's start


class TurnRunner:
    def __init__(self, parts: LoopParts) -> None:
        self.p = parts

    async def run(self, prompt: str, turn: TurnState) -> None:
        """Every way out ends with TurnFinished."""
        p, out = self.p, self.p.out
        prompt = valid_text(prompt)   # e.g. undecodable stdin: it must encode, in the request and the log
        p.out.figures.turns += 1
        mentioned = await mention_entry(prompt, p.tool_ctx)   # the files it @-mentions, attached
        p.history.append(mentioned.entry)
        p.files.checkpoint(mentioned.entry)   # what /rewind can put back
        out.emit(ev.TurnStarted(turn=p.out.figures.turns, prompt=prompt))
        for said in mentioned.events:
            out.emit(said)
        for notice in await p.start_mcp() + p.mcp_notices:
            out.emit(ev.Notice(notice))
        p.mcp_notices.clear()
        await p.counter.head_counted()
        while True:
            stop = over_limit(p.limits, turn.calls, p.cost.total_usd)
            if stop is not None:
                out.emit(ev.Error(*stop))
                return out.finish(stop[0])
            request = await self._compacted_request()
            if request is None:
                return out.finish("blocking")
            try:
                response = await self._call_model(request, turn)
            except ModelError as e:
                if await self._recovered(e, turn):
                    continue
                return out.finish("error")
            tool_uses = self._record_answer(response, turn)
            if response.stop_reason == "compaction":
                continue   # the server paused after compacting: the answer follows in the next call
            if not tool_uses:
                return out.finish(response.stop_reason or "end_turn")
            batch = await run_batch(tool_uses, turn, tools=p.tools, permissions=p.permissions,
                                    ctx=p.tool_ctx, ask=self._asker(), emit=out.emit)
            if batch.compact_requested:
                p.compact_queue.ask(batch.compact_focus)
            p.history.append(Entry({"role": "user", "content": batch.blocks}))
            trouble = p.files.trouble()
            if trouble:
                out.emit(ev.Notice(trouble))
            out.log_state()
            await self.compact_if_queued()

    def repair(self, turn: TurnState) -> None:
        """Keep what was done; answer unanswered tool calls so the history stays valid. Runs at
        most once per turn (a failed log write can interrupt it and call it again)."""
        pending, partial = turn.pending_tool_uses, "".join(turn.partial_text)
        turn.pending_tool_uses, turn.partial_text = [], []
        if pending:
            blocks = [turn.done_results.get(tu["id"]) or tool_result_block(tu["id"], CANCELLED_RESULT, is_error=True)
                      for tu in pending]
            self.p.history.append(Entry({"role": "user", "content": blocks}))
        elif partial.strip():
            self.p.history.append(Entry({"role": "assistant", "content": [
                {"type": "text", "text": partial}]}, meta={"cancelled": True}))

    async def _compacted_request(self) -> list[dict] | None:
        """Run the pipeline over the history and return the messages to send; None when the
        context is at the blocking limit (said as an Error)."""
        p, out = self.p, self.p.out
        said = out.figure_before_pipeline()
        res = await p.pipeline.run(p.history.entries)
        p.last.tokens, p.last.estimate = res.tokens, sum(e.tokens for e in res.view)
        p.last.added = added_since_usage(res.view)
        compacted = p.history.adopt_reports(res.entries, res.reports, p.pipeline, out.emit)
        if compacted or res.tokens != said:     # the figure just said is still the figure
            out.context(compacted, tokens=res.tokens, view=res.view)
        if compacted:
            p.confirm_later(res.request, res.view)
        blocked = p.pipeline.blocked(res.tokens, res.view)
        if blocked:
            out.emit(ev.Error("blocking", blocked))
            return None
        return res.request

    async def _call_model(self, request: list[dict], turn: TurnState) -> ModelResponse:
        p, head = self.p, self.p.head
        started = time.monotonic()
        response: ModelResponse | None = None
        p.cache_watch.sending(model=p.client.info.model, at=p.now(), ttl=p.pipeline.config.cache_ttl,
                              tools=head.tool_defs, system=head.system_prompt, messages=request,
                              head_tokens=(head.tools_tokens, head.system_tokens))
        limit = max_tokens(p.pipeline.budget, p.client.info.max_output_tokens, p.last.tokens,
                           turn.undercount, p.pipeline.api_judges)
        async for item in p.client.stream(system=head.system_prompt, messages=request, tools=head.tool_defs,
                                          max_tokens=limit, purpose="main"):
            if isinstance(item, ModelResponse):
                response = item
                continue
            if isinstance(item, ev.CompactionStarted) and not item.tokens_before:
                item.tokens_before = p.last.tokens   # the server is summarizing what was sent
                p.last.compaction_started = item.started
            if isinstance(item, ev.TextDelta):
                turn.partial_text.append(item.text)
            if p.out.queue is not None:
                p.out.queue.put_nowait(item)      # streamed: neither logged nor sent to telemetry
        if response is None:
            raise ModelError("server", "The model's answer ended without a final message; try again.", True)
        turn.call_s = round(time.monotonic() - started, 3)
        return response

    def _record_answer(self, response: ModelResponse, turn: TurnState) -> list[dict]:
        """Add the answer to the history and the cost book; returns the tool calls it asks for."""
        p, out = self.p, self.p.out
        turn.calls += 1
        turn.partial_text.clear()
        outcome = outcome_of(response)
        paused = paused_after_compaction(response, outcome)
        odd = response.usage.get(NOT_BELIEVABLE)    # usage_to_dict zeroed it: said, and the count estimates
        if odd:
            out.emit(ev.Notice(str(odd)))
        p.history.append(Entry({"role": "assistant", "content": response.content}, response_id=response.id,
                               usage=None if paused or odd else response.usage, meta=answer_meta(response, outcome)))
        if not paused and (outcome is None or not outcome.acted) and response.usage:
            p.counter.learn_from_answer(response.usage, p.history.entries[-1], p.last.added, p.last.estimate)
        p.record_call(ev.ModelCall(message_id=response.id, model=response.model, purpose="main",
                                   usage=response.usage, duration_s=turn.call_s))
        miss = p.cache_watch.answered(response.usage)
        if miss is not None:
            out.emit(ev.CacheMiss(text=miss.text(), **miss.to_dict()))
        if outcome is not None and outcome.compaction_usage:
            p.record_call(ev.ModelCall(message_id=f"{response.id}:compaction", model=response.model,
                                       purpose="compaction", usage=outcome.compaction_usage))
        out.emit(ev.AssistantDone(message_id=response.id, model=response.model, usage=response.usage,
                                  stop_reason=response.stop_reason))
        out.emit(p.cost.event())
        compacted = False
        if outcome is not None:
            if outcome.ignored:
                out.emit(ev.Notice(ignored_notice(outcome.ignored)))
            started, p.last.compaction_started = p.last.compaction_started or time.time(), None
            before = p.history.entries
            server = server_compaction(outcome, response.usage, before, p.last.tokens, started, p.pipeline)
            if server.entries is not None:
                p.history.adopt(server.entries)
                last = server.events[-1]
                assert isinstance(last, ev.Compaction)
                last.parts = parts_of(before, p.history.entries, [last.layer], p.pipeline)
            compacted = p.history.say(server.events, out.emit)
        p.counter.moved_on()
        out.context(compacted)
        return [b for b in response.content if b.get("type") == "tool_use"]

    async def _recovered(self, e: ModelError, turn: TurnState) -> bool:
        """After a failed call: True when it is worth sending again (compacted once after "prompt
        too long", or a stream that broke off); otherwise the failure is said as an Error."""
        out = self.p.out
        if self._refitted(e, turn):
            return True
        if e.kind == "prompt_too_long" and not turn.reactive_used:
            turn.reactive_used = True
            out.emit(ev.Notice("The model said the prompt is too long; compacting and retrying once."))
            return await self._compact_to_fit(e, turn)
        if e.retryable and e.status is None and not e.already_retried \
                and turn.stream_retries < MID_STREAM_RETRIES:
            turn.stream_retries += 1
            turn.partial_text.clear()
            out.emit(ev.StreamRetry(e.message.split(";")[0], turn.stream_retries, MID_STREAM_RETRIES))
            await asyncio.sleep(0.2 * turn.stream_retries)
            return True
        out.emit(ev.Error(e.kind, e.message, e.retryable))
        return False

    def _refitted(self, e: ModelError, turn: TurnState) -> bool:
        """The API counted more than the estimate and refused input + max_tokens over the window:
        send once more with the room it says is left (no compaction) when that room is enough. A
        window it names that is smaller than ours is ours from now on (server_window.py)."""
        over = parse_max_tokens_over_window(e.message) if e.kind == "prompt_too_long" else None
        if over is None or turn.refit_used:
            return False
        counted, _asked, window = over
        turn.refit_used = True
        self._adopt_server_window(window)
        turn.undercount, fits = refit_room(self.p.pipeline.budget, self.p.client.info.max_output_tokens,
                                           self.p.last.tokens, counted, window)
        return fits

    def _adopt_server_window(self, window: int) -> None:
        """Work within the API's smaller window for the rest of the session (said once)."""
        notice = server_window.adopt(self.p.pipeline, self.p.client, self.p.tool_ctx, window)
        if notice is not None:
            self.p.out.emit(ev.Notice(notice))

    async def _compact_to_fit(self, e: ModelError, turn: TurnState) -> bool:
        """The one compaction after "prompt too long" (compaction_runs.to_fit). True: send again."""
        p = self.p
        fitted = await compaction_runs.to_fit(e, p.pipeline, p.history, p.last.tokens, self._adopt_server_window,
                                              p.out.emit)
        if fitted is None:
            return False
        turn.undercount = fitted.undercount   # an earlier refit's figure belonged to the longer request
        p.out.context(True, tokens=fitted.tokens, view=fitted.view)
        p.confirm_later(fitted.request, fitted.view)
        return True

    def _asker(self) -> Ask | None:
        """How the policy asks: the request goes out with the other events and the front-end
        answers on the request itself. None when no one is there to answer."""
        if not self.p.interactive:
            return None
        out = self.p.out

        async def ask(req: ev.PermissionRequest) -> str:
            out.emit(req)
            return await req.reply
        return ask

    # ----- shell mode and /compact -----------------------------------------------------------------
    async def shell(self, command: str) -> None:
        """`!command`: the user's command and its output become the user's message."""
        p, out = self.p, self.p.out
        try:
            done = await run_shell(valid_text(command), p.tool_ctx)
        except asyncio.CancelledError:
            out.emit(ev.ShellRan(command, "", cancelled=True))
            return
        try:
            entry = done.entry()
            p.history.append(entry)        # kept in memory on a failed write: the next one catches up
            p.files.checkpoint(entry)
        finally:
            out.emit(ev.ShellRan(done.command, done.output, done.exit_code, done.is_error))
        out.log_state()
        out.context()
        await self.compact_if_queued()    # /compact while it ran: queued until now, as after a tool batch

    async def compact_if_queued(self) -> None:
        """/compact while a batch or a shell command ran, or the compact tool: its turn is now."""
        q = self.p.compact_queue
        if q.queued:
            focus, q.queued, q.focus = q.focus, False, None
            await self.compact_now(focus)

    async def compact_now(self, focus: str | None) -> None:
        p, out = self.p, self.p.out
        tokens = p.pipeline.view(p.history.entries)[1]
        ran = await compaction_runs.manual(p.pipeline, p.history, focus, tokens, out.emit)
        if ran is None:
            return
        res, compacted = ran
        out.context(compacted)
        if compacted:
            p.confirm_later(res.request, res.view)
        out.emit(p.cost.event())
