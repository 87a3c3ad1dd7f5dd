"""The compactions the user or the API asks for, outside the pipeline's own run before a call:
`/compact` (manual) and the one after "prompt too long" (reactive), sized by the refusal's
numbers (server_window.py). Each returns what it left; the agent says the figure."""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable

from compaction import Entry, Pipeline
from compaction.pipeline import PipelineResult

from agent_core import events as ev
from agent_core.loop import server_window
from agent_core.loop.history import Emit, History
from agent_core.providers.errors import parse_prompt_too_long
from agent_core.providers.model import ModelError


@dataclass
class Fitted:
    """The reactive compaction's result: the request to send again, its count and view, and what
    the server is expected to count above that (the retry's max_tokens leaves room for it)."""
    request: list[dict]
    tokens: int
    view: list[Entry]
    undercount: int


async def manual(pipeline: Pipeline, history: History, focus: str | None, tokens_now: int,
                 emit: Emit) -> tuple[PipelineResult, bool] | None:
    """`/compact [focus]`: the compaction's result and whether it compacted; None when there was
    nothing to compact (said)."""
    if not any(e.sent for e in history.entries):
        emit(ev.Notice("Nothing to compact yet."))
        return None
    started = time.monotonic()
    out = await pipeline.compact(history.entries, trigger="manual", instructions=focus)
    compacted = history.adopt_reports(out.entries, out.reports, pipeline, emit)
    if not compacted:
        emit(ev.Notice(f"Compaction did not shrink the context ({tokens_now:,} tokens); history kept "
                       f"({time.monotonic() - started:.1f}s)."))
    return out, compacted


async def to_fit(e: ModelError, pipeline: Pipeline, history: History, request_tokens: int,
                 adopt_window: Callable[[int], None], emit: Emit) -> Fitted | None:
    """After "prompt too long" ("N tokens > M maximum"): a maximum below our window becomes the
    session's window first, so the stages keep what fits it; and the compaction aims low by however
    much the server counted more than the estimate of the same request, so the retry fits once it
    is counted. A first pass that shrinks but still leaves the retry over the auto-compact threshold
    is followed by a second one (a summary in place of the notes, say). None: it did not help (said)."""
    parsed = parse_prompt_too_long(e.message)
    ratio = 1.0
    if parsed is not None:
        server_tokens, maximum = parsed
        adopt_window(maximum)
        ratio = server_window.count_ratio(server_tokens, request_tokens)
    budget = pipeline.budget
    pipeline.set_budget(server_window.fit_budget(budget, ratio))
    try:
        out = await pipeline.compact(history.entries, trigger="reactive")
        compacted = history.adopt_reports(out.entries, out.reports, pipeline, emit)
        if compacted and out.tokens * ratio >= budget.autocompact_threshold:
            again = await pipeline.compact(history.entries, trigger="reactive")
            if history.adopt_reports(again.entries, again.reports, pipeline, emit):
                out = again
    finally:
        pipeline.set_budget(budget)
    if not compacted:
        why = pipeline.auto_compact_stopped() or "compaction could not shrink the history"
        emit(ev.Error("prompt_too_long", f"{e.message} Compaction did not help ({why}). "
                                         "Run /compact with a focus, or /clear."))
        return None
    # The server counts this history higher than the estimate, by the same ratio.
    return Fitted(out.request, out.tokens, out.view, math.ceil(out.tokens * (ratio - 1.0)))
