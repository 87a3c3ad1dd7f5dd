"""The loop's side of the server and hybrid engines (agent_core/providers/server_context.py).

The server does the work inside the model call; the loop's job is to say what it did in the same
terms as its own layers: each applied edit and each compaction becomes a `Compaction` event
(layer `server_clear_tool_uses`, `server_clear_thinking`, `server_compact`) with the tokens before
and after and, for a compaction, the usage (so the cost) of the compaction step; and a compaction
block replaces what it summarizes in the working history, as the API does with it (the session
log keeps every entry). The pipeline keeps its cheap layers (all of them in hybrid, the tool-result
budget alone in server) but never calls a model by itself: automatic summarizing is the server's,
while /compact and the one compaction after "prompt too long" still use ctxtui's own stages.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Sequence

from compaction import Entry, Pipeline, clock
from compaction.pipeline import PipelineResult
from compaction.entry import boundary

from agent_core import events as ev
from agent_core.providers.model import ModelResponse
from agent_core.providers.server_context import (COMPACTION_BLOCK, SERVER_COMPACT_LAYER, ServerOutcome, input_total,
                                                 read_outcome)


class ServerEnginePipeline(Pipeline):
    """The pipeline of the server and hybrid engines: cheap layers only before a call; the server
    compacts at the threshold the request names."""

    async def run(self, entries: Sequence[Entry], now: float | None = None) -> PipelineResult:
        self._observe(entries)
        return self.run_cheap(entries, now)

    # The request the loop counts is an upper bound of what the model is shown: the server clears
    # and compacts before the model reads it. The loop then sends what it would otherwise hold back.
    server_edits = True

    def blocked(self, tokens: int, view: Sequence[Entry] = ()) -> str | None:
        """The server compacts a request over its trigger (and clears old tool results) before the
        model reads it, so the limit that stays ours is the window itself; a request the API still
        refuses as too long gets the loop's own compaction once, as in the local engine."""
        if tokens < self.config.budget.context_window:
            return None
        return super().blocked(tokens, view)


def without_summarized(entries: list[Entry], answer_index: int, tokens_before: int, tokens_after: int) -> list[Entry]:
    """The working history once the answer at `answer_index` (whose content opens with a
    compaction block) replaces everything before it: a boundary (never sent), then the answer and
    what follows it."""
    mark = boundary("auto", tokens_before, tokens_after, None, SERVER_COMPACT_LAYER)
    return [mark, *entries[answer_index:]]


def clear_events(outcome: ServerOutcome, usage: dict) -> list[ev.Compaction]:
    """One event per edit the server applied; `usage` is the answer's, so the tokens after are
    what the model was shown (what the compaction read, when the server compacted too), and before
    that plus what the edit cleared."""
    after = input_total(outcome.compaction_usage or outcome.message_usage or usage)
    out = []
    for c in outcome.clears:
        what = "tool results" if c.layer == "server_clear_tool_uses" else "thinking turns"
        out.append(ev.Compaction(layer=c.layer, trigger="auto", tokens_before=after + c.cleared_tokens,
                                 tokens_after=after, timestamp=clock.now(),
                                 action=f"The API cleared {c.cleared} old {what} ({c.cleared_tokens:,} tokens) "
                                        f"from what the model saw; the history keeps them."))
    return out


def compact_event(outcome: ServerOutcome, tokens_before: int, tokens_after: int, duration_s: float) -> ev.Compaction:
    """The server's compaction, priced from the compaction step's own usage."""
    return ev.Compaction(layer=SERVER_COMPACT_LAYER, trigger="auto", tokens_before=tokens_before,
                         tokens_after=tokens_after, duration_s=round(duration_s, 4), timestamp=clock.now(),
                         action=f"The API summarized the conversation into a compaction block "
                                f"({len(outcome.summary):,} characters); it replaces what it summarizes.",
                         usage=dict(outcome.compaction_usage) if outcome.compaction_usage else None)


FAILED_COMPACTION = ("The API's compaction failed (it returned no summary); nothing was compacted. The empty "
                     "block is kept as the API sent it, which the API treats as a no-op.")


def outcome_of(response: ModelResponse) -> ServerOutcome | None:
    """What the server did to the context for this answer (server and hybrid engines)."""
    if response.server is None and not any(b.get("type") == COMPACTION_BLOCK for b in response.content):
        return None
    return read_outcome(response.content, response.server)


def answer_meta(response: ModelResponse, outcome: ServerOutcome | None) -> dict[str, object]:
    """The answer entry's meta: its model, and the server's edits that shaped what it was shown."""
    meta: dict[str, object] = {"model": response.model}
    if outcome is not None and outcome.acted:
        meta["server_edits"] = [c.layer for c in outcome.clears] + (
            [SERVER_COMPACT_LAYER] if outcome.compacted else [])
    return meta


def paused_after_compaction(response: ModelResponse, outcome: ServerOutcome | None) -> bool:
    """A pause after a compaction reports no sampling step: its usage says nothing about the size
    of the context, so the count estimates that answer instead of anchoring on it."""
    return response.stop_reason == "compaction" and (outcome is None or outcome.message_usage is None)


@dataclass
class ServerCompaction:
    """The server's edits and compaction of one answer, in the loop's terms: the events to keep
    and say (clears first), and the working history when a compaction block replaced what it
    summarizes (None when the history stands)."""
    events: list[ev.Event] = field(default_factory=list)
    entries: list[Entry] | None = None


def server_compaction(outcome: ServerOutcome, usage: dict, entries: list[Entry], tokens_before: int,
                      started: float, pipeline: Pipeline) -> ServerCompaction:
    """`entries` ends with the answer holding the compaction block, if any; `tokens_before` is the
    count of the request sent, `started` when the server began compacting (wall clock)."""
    out = ServerCompaction(events=list(clear_events(outcome, usage)))
    if outcome.compaction_index is None:
        return out
    if outcome.compaction_failed:
        out.events.append(ev.Error("compaction", FAILED_COMPACTION, retryable=True))
        return out
    new = without_summarized(entries, len(entries) - 1, tokens_before, 0)
    tokens_after = pipeline.view(new)[1]
    new[0] = new[0].with_meta(tokens_after=tokens_after)
    out.entries = new
    out.events.append(compact_event(outcome, tokens_before, tokens_after, time.time() - started))
    return out
