"""Counting a request as the server does (docs/engine.md, "Counting"): the estimator's figures are
scaled by what the server's own counts taught — the usage of each answer, and count_tokens of the
head at session start and of the request after a compaction (both in the background, never awaited
by a turn beyond HEAD_WAIT_S). What was learnt is kept in the pipeline state under COUNTED, so a
resumed session counts the same, as a `SavedCalibration` (typed; the state keeps its fields)."""
from __future__ import annotations

import asyncio
from dataclasses import asdict, dataclass, replace
from typing import Any, Callable, Mapping, Sequence

from compaction import Entry, Pipeline
from compaction.estimate import MESSAGE_OVERHEAD, estimate_message
from compaction.accounting.tokens import adjust_anchor, anchor_index, usage_total

from agent_core.loop.request_head import RequestHead
from agent_core.providers.model import ModelClient

COUNTED = "counted"   # the pipeline-state part that keeps what the server's counts taught
# Server tokens per estimated token are learnt from a request the server counted once its messages
# are estimated at this many tokens at least (a shorter one says more about the head's count than
# about the ratio), and kept within these bounds.
CALIBRATE_MIN_ESTIMATE = 500
CALIBRATION_BOUNDS = (0.25, 4.0)
# Answers are counted at their own rate (output tokens against their estimate, the latest weighing
# most: each answer's figures join sums that decay by ANSWERS_DECAY), once the sums reach this size.
CALIBRATE_MIN_ANSWERS = 300
ANSWERS_DECAY = 0.8
# The head is counted by count_tokens with this one short message; the first model call waits for
# that count at most this long, once a session.
HEAD_PROBE = [{"role": "user", "content": [{"type": "text", "text": "."}]}]
HEAD_WAIT_S = 5.0


def _positive(v: object) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 else None


def _int(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _clamp(ratio: float) -> float:
    lo, hi = CALIBRATION_BOUNDS
    return min(hi, max(lo, ratio))


@dataclass(frozen=True)
class SavedCalibration:
    """What the server's counts taught, read from the saved state (a value of the wrong type reads
    as not learnt: a hand-edited or damaged log never breaks the count)."""
    ratio: float | None = None             # server tokens per estimated token
    ratio_from: str | None = None          # "added": learnt from what a request added; "request": the whole
    answers_real: float | None = None      # decayed sums of answers' output tokens ...
    answers_estimate: float | None = None  # ... and of their estimates
    head: int | None = None                # the head in server tokens (count_tokens)
    head_estimate: int | None = None       # the head's estimate when it was counted
    overhead_adjust: int = 0               # what a confirmation before any answer corrected
    view_end: str | None = None            # the last entry of the view that confirmation counted

    @classmethod
    def read(cls, saved: Mapping[str, Any] | None) -> SavedCalibration:
        s = saved or {}
        head = _int(s.get("head"))
        return cls(ratio=_positive(s.get("ratio")),
                   ratio_from=s.get("ratio_from") if isinstance(s.get("ratio_from"), str) else None,
                   answers_real=_positive(s.get("answers_real")),
                   answers_estimate=_positive(s.get("answers_estimate")),
                   head=head if head is not None and head > 0 else None,
                   head_estimate=_int(s.get("head_estimate")),
                   overhead_adjust=_int(s.get("overhead_adjust")) or 0,
                   view_end=s.get("view_end") if isinstance(s.get("view_end"), str) else None)

    def head_of(self, estimate: int) -> int | None:
        """The counted head when it was counted for a head estimated at `estimate` (a resumed
        session's system prompt or tools may have changed since)."""
        return self.head if self.head is not None and self.head_estimate == estimate else None

    @property
    def assistant(self) -> float | None:
        """The rate answers are counted at, once enough of them were seen."""
        real, est = self.answers_real, self.answers_estimate
        if self.ratio is None or not real or not est or est < CALIBRATE_MIN_ANSWERS:
            return None
        return _clamp(real / est)


def added_since_usage(view: Sequence[Entry]) -> tuple[int, int] | None:
    """(the usage anchor's count, the estimate of what follows it) for a request whose anchor no
    layer has shifted: the server's count of it less the first is what it counts for the second."""
    i = anchor_index(view)
    if i is None:
        return None
    a = view[i]
    if a.meta.get("usage_adjust") or a.meta.get("real_adjust") or a.meta.get("server_edits"):
        return None
    return usage_total(a.usage), sum(e.tokens for e in view[i + 1:])


class Counter:
    """Learns the calibration and hands it to the pipeline. `entries` reads the working history
    (a confirmation re-anchors it); `gen` moves on with every response or compaction, so a
    confirmation that lands after one is dropped."""

    def __init__(self, pipeline: Pipeline, client: ModelClient, head: RequestHead,
                 entries: Callable[[], list[Entry]]) -> None:
        self.pipeline = pipeline
        self.client = client
        self.head = head
        self._entries = entries
        self.gen = 0
        self.head_task: asyncio.Task[None] | None = None          # count_tokens of the head
        self.confirmation: asyncio.Task[None] | None = None       # count_tokens after a compaction

    @property
    def saved(self) -> SavedCalibration:
        return SavedCalibration.read(self.pipeline.recalled(COUNTED))

    def _remember(self, learnt: SavedCalibration) -> None:
        self.pipeline.remember(COUNTED, asdict(learnt))
        self.apply()

    def apply(self) -> None:
        """Hand the pipeline the ratio its estimates are counted at and the head in server tokens:
        counted by count_tokens, else the head's estimate at the ratio (with what a confirmation
        before any answer corrected)."""
        saved = self.saved
        self.pipeline.set_calibration(saved.ratio, saved.assistant)
        head = saved.head_of(self.head.estimate)
        if head is None:
            head = round((saved.ratio or 1.0) * self.head.estimate)
        self.pipeline.set_overhead(head + saved.overhead_adjust)

    def moved_on(self) -> None:
        """A response or a compaction changed what a pending confirmation counted."""
        self.gen += 1

    def count_request(self, messages: list[dict]) -> int:
        """The calibrated count of a request of `messages` with the session's head (a summary
        request, sized before it is sent)."""
        cal = self.pipeline.config.count_ratio
        return self.pipeline.overhead_tokens + round(sum(
            estimate_message(m) * (cal.assistant if m.get("role") == "assistant" else cal.ratio) for m in messages))

    def source(self, view: Sequence[Entry]) -> str:
        """Where the count of `view` comes from, read from the history and the pipeline state alone
        (so a resumed session says the same): `counted` when count_tokens confirmed it, `usage` when
        it is anchored on a response's usage that no layer has shifted since, `server` when the
        server's own edits shaped that answer, else `estimate`."""
        i = anchor_index(view)
        if i is None:
            end = self.saved.view_end
            return "counted" if end is not None and any(e.uuid == end for e in view) else "estimate"
        # The working history's anchor says whether it was counted since a layer last shifted it;
        # the view's (collapse shifts it there alone) whether an estimate shifted it.
        entries = self._entries()
        w = anchor_index(entries)
        meta = entries[w].meta if w is not None else {}
        if "counted_adjust" in meta and meta["counted_adjust"] == meta.get("usage_adjust", 0):
            return "counted"
        if view[i].meta.get("usage_adjust"):
            return "estimate"
        return "server" if view[i].meta.get("server_edits") else "usage"

    # ----- learning from the server's counts ------------------------------------------------
    def learn_ratio(self, server_tokens: int, estimate: int, marginal: bool = False) -> None:
        """A request the server counted. `marginal`: `server_tokens` is what it counted for what was
        added since the last response and `estimate` ctxtui's estimate of that: the ratio of the
        content a session adds and its layers remove, preferred once known. Otherwise the whole
        request against its messages' estimate (the head's count taken out, or the head's estimate
        put in before it is counted), used until a marginal one is learnt."""
        if self.client.info.offline:
            return   # the demo model counts with the estimator itself: nothing to learn
        saved = self.saved
        if not marginal and saved.ratio_from == "added":
            return
        head = saved.head_of(self.head.estimate)
        if marginal:
            real, est = server_tokens, estimate
        elif head is not None:
            real, est = server_tokens - head, estimate
        else:
            real, est = server_tokens, estimate + self.head.estimate
        if estimate < CALIBRATE_MIN_ESTIMATE or real <= 0:
            return
        ratio = round(_clamp(real / est), 4)
        if ratio != saved.ratio:
            self._remember(replace(saved, ratio=ratio, ratio_from="added" if marginal else "request"))

    def learn_answer(self, output_tokens: int, answer: Entry) -> None:
        """An answer's output tokens against its estimate (less the message's own overhead, which
        output does not count): the rate answers are counted at, kept with the ratio."""
        est = answer.tokens - MESSAGE_OVERHEAD
        if self.client.info.offline or output_tokens <= 0 or est <= 0:
            return
        saved = self.saved
        real = (saved.answers_real or 0.0) * ANSWERS_DECAY + output_tokens
        est_sum = (saved.answers_estimate or 0.0) * ANSWERS_DECAY + est
        self._remember(replace(saved, answers_real=round(real, 1), answers_estimate=round(est_sum, 1)))

    def learn_from_answer(self, usage: Mapping[str, Any], answer: Entry, added: tuple[int, int] | None,
                          request_estimate: int) -> None:
        """The usage of an answer no server edit shaped: its output against the answer's estimate,
        and its input against the request's (or against what the request added, when known)."""
        served = sum(int(usage.get(k) or 0) for k in ("input_tokens", "cache_creation_input_tokens",
                                                      "cache_read_input_tokens"))
        self.learn_answer(int(usage.get("output_tokens") or 0), answer)
        if added is not None and added[1] >= CALIBRATE_MIN_ESTIMATE:
            self.learn_ratio(served - added[0], added[1], marginal=True)
        else:
            self.learn_ratio(served, request_estimate)

    # ----- count_tokens, in the background ---------------------------------------------------
    def count_head_later(self) -> None:
        """With a real API and no counted head yet: count the system prompt and the tools with the
        free count_tokens endpoint, in the background, once a session."""
        if self.client.info.offline or self.head_task is not None:
            return
        if self.saved.head_of(self.head.estimate) is not None:
            return
        self.head_task = asyncio.get_running_loop().create_task(self._count_head())

    async def _count_head(self) -> None:
        estimate = self.head.estimate     # of the head counted (MCP tools may come later)
        counted = await self.client.count_tokens(system=self.head.system_prompt, messages=HEAD_PROBE,
                                                 tools=self.head.tool_defs)
        if counted is None:
            return   # the estimate stands (the API could not count)
        probe = round(self.pipeline.config.count_ratio.ratio * estimate_message(HEAD_PROBE[0]))
        self._remember(replace(self.saved, head=max(1, counted - probe), overhead_adjust=0, head_estimate=estimate))

    async def head_counted(self) -> None:
        """Before the session's first call: let the head's count land (at most HEAD_WAIT_S)."""
        self.count_head_later()
        task = self.head_task
        if task is None or task.done():
            return
        try:
            await asyncio.wait_for(asyncio.shield(task), HEAD_WAIT_S)
        except (asyncio.TimeoutError, Exception):
            pass   # a count that is late or failed leaves the estimate; the first usage corrects it

    def tools_changed(self) -> None:
        """The tools offered changed: a head counted without them is counted again."""
        if self.head_task is not None:
            self.head_task.cancel()
            self.head_task = None
        self.apply()

    def confirm_later(self, request: list[dict], view: list[Entry],
                      confirmed: Callable[[list[Entry] | None], None]) -> None:
        """After a compaction, with a real API: count the new request (`view` projected) in the
        background, learn the calibration from it and re-anchor the count on it; `confirmed` gets
        the re-anchored history (None when the correction went to the head instead)."""
        if self.client.info.offline:
            return
        if self.confirmation is not None:
            self.confirmation.cancel()
        self.confirmation = asyncio.get_running_loop().create_task(
            self._confirm(request, view, self.gen, confirmed))

    async def _confirm(self, request: list[dict], view: list[Entry], gen: int,
                       confirmed: Callable[[list[Entry] | None], None]) -> None:
        counted = await self.client.count_tokens(system=self.head.system_prompt, messages=request,
                                                 tools=self.head.tool_defs)
        if counted is None or gen != self.gen:
            return   # the API could not count (a confirmation only), or a response or compaction came since
        self.learn_ratio(counted, sum(e.tokens for e in view))
        confirmed(self.reanchored(counted - self.pipeline.count(view)))

    def reanchored(self, delta: int) -> list[Entry] | None:
        """The history with its usage anchor shifted by `delta` (what the calibrated count still
        missed: the count of that request is now the API's); with no answer yet, the delta goes to
        the head's adjustment instead and None is returned."""
        entries = self._entries()
        i = anchor_index(entries)
        if i is None:
            saved = self.saved
            self._remember(replace(saved, overhead_adjust=saved.overhead_adjust + delta,
                                   view_end=entries[-1].uuid if entries else None))
            return None
        shifted = adjust_anchor(entries, delta, i, real=True)
        a = shifted[i]
        shifted[i] = a.with_meta(counted_adjust=int(a.meta.get("usage_adjust", 0)))
        return shifted

    def close(self) -> None:
        for task in (self.confirmation, self.head_task):
            if task is not None:
                task.cancel()
