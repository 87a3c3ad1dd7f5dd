"""Lets the compaction engine ask the session's model for a summary without importing any SDK.

The summary call is sent like a main call — the session's system prompt, its tool definitions, no
`tool_choice` of its own — so its prefix is the main call's and the API reads the conversation
from the prompt cache. The model could therefore call a tool; such an answer is no summary and is
refused as a failed attempt (after its cost is booked).
"""
from __future__ import annotations

import math
import time
from typing import Callable

from compaction.estimate import estimate_message, estimate_text, estimate_tools
from compaction.summarizer import SummarizeError, SummaryResult

from agent_core.context_budget import ESTIMATE_MARGIN, OUTPUT_FLOOR, output_room

from agent_core.events import CompactionDelta, CompactionEnded, CompactionStarted, Event, ModelCall, TextDelta
from agent_core.providers.model import ModelClient, ModelError, ModelResponse

TRANSPORT_KINDS = frozenset({"connection", "server", "overloaded", "rate_limit"})
# The least room a summary needs, as a share of the window (at most OUTPUT_FLOOR): in a small window
# a summary must be small anyway (the engine scales its other summary knobs the same way), and a
# floor that does not fit sends the request into the prompt-too-long retry, which drops the oldest
# rounds — a request that no longer starts like the main one reads nothing from the prompt cache.
SUMMARY_FLOOR_SHARE = 0.05


def summary_floor(context_window: int, cap: int) -> int:
    return max(1, min(OUTPUT_FLOOR, cap, int(context_window * SUMMARY_FLOOR_SHARE)))


class ModelSummarizer:
    """A compaction `Summarizer` backed by a `ModelClient`. Each call it makes is handed to
    `record` as a `ModelCall` with purpose `compaction` (the agent books and logs it). `emit`, when
    set, is handed the call's progress as it happens — CompactionStarted, each CompactionDelta of
    the summary text, CompactionEnded — so a front-end can show a summary that takes tens of
    seconds while it is written rather than nothing until it lands."""

    def __init__(self, client: ModelClient, record: Callable[[ModelCall], None], max_tokens: int | None = None,
                 tools: list[dict] | None = None, system: str = "",
                 emit: Callable[[Event], None] | None = None,
                 count: Callable[[list[dict]], int] | None = None) -> None:
        self.client = client
        # How the session counts a request of these messages (its calibrated count: the agent's
        # `count_request`); None: the plain estimate.
        self.count = count
        self.record = record
        self.emit = emit
        self.max_tokens = max_tokens
        # The main call's system prompt and tool definitions: the same prefix lets the summary call
        # read the prompt cache, and the API requires the tools when the history holds tool blocks.
        self.system = system
        self.tools = list(tools or [])

    async def summarize(self, messages: list[dict], *, instructions: str | None = None) -> SummaryResult:
        # The room for the summary: input + max_tokens must fit the window, or the API refuses it.
        info = self.client.info
        n = self.count(messages) if self.count is not None else (
            estimate_text(self.system) + estimate_tools(self.tools) + sum(estimate_message(m) for m in messages))
        cap = self.max_tokens or min(info.max_output_tokens, 20_000)
        floor = summary_floor(info.context_window, cap)
        max_tokens = output_room(info.context_window, cap, n, floor)
        if max_tokens is None:   # said as the API says it, so the retry drops enough of the oldest rounds
            raise SummarizeError(f"the summary request leaves no room for the summary: prompt is too long: "
                                 f"{n + floor} tokens > {info.context_window} maximum "
                                 "(estimated)", prompt_too_long=True)
        # The count is an estimate: leave the main call's margin of its usual error beside it. Without
        # it a count a few tokens low was refused as input + max_tokens over the window, taken for
        # prompt too long, and every retry with fewer rounds filled the window again, up to the breaker.
        max_tokens = min(max_tokens, max(floor, info.context_window - n - math.ceil(ESTIMATE_MARGIN * n)))
        started = time.monotonic()
        self._say(CompactionStarted(purpose="compaction", tokens_before=n, started=time.time()))
        chars = 0
        try:
            response = await self._stream(messages, max_tokens)
            self.record(ModelCall(message_id=response.id, model=response.model, purpose="compaction",
                                  usage=response.usage, duration_s=round(time.monotonic() - started, 3)))
            called = [str(b.get("name", "?")) for b in response.content if b.get("type") == "tool_use"]
            if called:
                raise SummarizeError(f"the model called a tool ({', '.join(called)}) instead of writing the summary")
            text = "".join(b.get("text", "") for b in response.content if b.get("type") == "text")
            chars = len(text)
        except SummarizeError as e:
            self._say(CompactionEnded(ok=False, duration_s=round(time.monotonic() - started, 3), message=e.message))
            raise
        except BaseException:   # cancelled (Esc) or a bug: the live block must still end
            self._say(CompactionEnded(ok=False, duration_s=round(time.monotonic() - started, 3),
                                      message="the summary call was interrupted"))
            raise
        self._say(CompactionEnded(ok=True, duration_s=round(time.monotonic() - started, 3), chars=chars))
        return SummaryResult(text=text, usage=response.usage, model=response.model)

    async def _stream(self, messages: list[dict], max_tokens: int) -> ModelResponse:
        """The summary call; its text deltas are passed on as CompactionDelta as they arrive."""
        response: ModelResponse | None = None
        try:
            async for item in self.client.stream(system=self.system, messages=messages, tools=self.tools,
                                                 max_tokens=max_tokens, purpose="compaction"):
                if isinstance(item, ModelResponse):
                    response = item
                elif isinstance(item, TextDelta) and item.text:
                    self._say(CompactionDelta(text=item.text))
        except ModelError as e:
            raise SummarizeError(e.message, prompt_too_long=e.kind == "prompt_too_long",
                                 transport=e.kind in TRANSPORT_KINDS) from e
        if response is None:
            raise SummarizeError("the summary stream ended without a message", transport=True)
        return response

    def _say(self, e: Event) -> None:
        if self.emit is not None:
            self.emit(e)
