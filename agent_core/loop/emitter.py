"""What the loop says, and where it goes: each event to the running stream's queue, to the session
log when it is logged, and to telemetry; the context figure (figures.py) at the moments a front-end
must see it — before the pipeline acts, while a summary is written, after each answer and
compaction; and the state snapshot a resume needs."""
from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Callable, Mapping

from compaction import Entry, Pipeline
from compaction.pipeline import PipelineResult

from agent_core import events as ev
from agent_core.loop.figures import Figures
from agent_core.loop.history import History

if TYPE_CHECKING:     # types only: the sink loads the exporter, which only a configured collector needs
    from agent_core.telemetry.sink import TelemetrySink


class Emitter:
    """`now` is the session's clock; `snapshot` gives the state parts to keep (the agent's)."""

    def __init__(self, history: History, figures: Figures, pipeline: Pipeline, now: Callable[[], float],
                 snapshot: Callable[[], Mapping[str, object]]) -> None:
        self.history = history
        self.figures = figures
        self.pipeline = pipeline
        self.now = now
        self.snapshot = snapshot
        self.queue: asyncio.Queue[object] | None = None   # the running (or last) run's stream
        self.telemetry: TelemetrySink | None = None     # set by the factory when a collector is configured

    def emit(self, e: ev.Event) -> None:
        if e.logged:
            self.history.log.event(e.to_dict())
        if self.queue is not None:
            self.queue.put_nowait(e)
        if self.telemetry is not None:
            self.telemetry(e)

    def context(self, compacted: bool = False, tokens: int | None = None,
                view: list[Entry] | None = None) -> ev.ContextUpdate:
        """Say the context figure now (`tokens` and `view` when the pipeline just made them) and plot it."""
        c = self.figures.context_event(self.history.entries, self.now(), tokens, view)
        self.figures.plotted(self.figures.turns, c.tokens, compacted)
        self.emit(c)
        return c

    def figure_before_pipeline(self) -> int | None:
        """When what the next request would hold has reached the warning threshold, say that figure
        before the pipeline acts on it (and return it): the gauge, the status line and the plot then
        show the tool results landing — the context reaching WARNING, ERROR or AUTO-COMPACT — and the
        drop when a compaction lands."""
        budget = self.pipeline.budget
        entries = self.history.entries
        # the stored history counts at least what its projection does: below the warning, no view
        if self.pipeline.count(entries) < budget.warning_threshold:
            return None
        view, tokens = self.pipeline.view(entries)
        if not self.figures.worth_saying(tokens, budget.warning_threshold):
            return None
        self.context(tokens=tokens, view=view)
        return tokens

    def summary_figure(self, res: PipelineResult) -> None:
        """The pipeline is about to summarize at the auto-compact threshold: say the count it acts on
        (after the cheap layers), so the gauge shows AUTO-COMPACT while the summary is written."""
        if self.queue is not None and self.figures.worth_saying(res.tokens, self.pipeline.budget.autocompact_threshold):
            self.context(tokens=res.tokens, view=res.view)

    def log_state(self) -> None:
        """Snapshot what resume needs (the writer writes only the parts that changed)."""
        self.history.log.state(self.snapshot())

    def finish(self, reason: str) -> None:
        self.log_state()
        self.emit(ev.TurnFinished(stop_reason=reason, turns=self.figures.turns))
