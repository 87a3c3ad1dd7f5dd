"""The pipeline's compaction reports as the loop's events: a breaker that tripped, a layer that
failed, and each compaction with its figures; the run's last compaction carries what the run
changed (`parts`) for the inspector."""
from __future__ import annotations

from typing import Any, Sequence

from compaction import Entry, Pipeline, clock
from compaction.loss_report import loss_report
from compaction.report import CompactionReport

from agent_core import events as ev
from agent_core.loop.compaction_parts import compaction_parts


def cache_figures(details: dict[str, Any]) -> dict[str, Any] | None:
    """The cache economics a report carries (`details["cache"]`), as plain numbers and words; None
    when the layer said nothing about the cache."""
    cache = details.get("cache")
    if not isinstance(cache, dict):
        return None
    return {k: v for k, v in cache.items() if isinstance(v, (int, float, str)) or v is None}


def parts_of(before: Sequence[Entry], after: list[Entry], layers: list[str], pipeline: Pipeline) -> dict[str, Any]:
    """What a compaction changed (`compaction_parts`) and what it lost for the user (`loss_report`:
    against what the next request shows, collapsed spans hidden)."""
    parts = compaction_parts(list(before), after, layers)
    parts["loss"] = loss_report(list(before), pipeline.view(after)[0])
    return parts


def report_events(reports: Sequence[CompactionReport], pipeline: Pipeline, before: Sequence[Entry] | None = None,
                  after: list[Entry] | None = None) -> list[ev.Event]:
    """One event per report. `before` and `after`: the history the run started from and the one it
    left, for the last compaction's parts."""
    acted = [r for r in reports if r.layer != "breaker" and not r.details.get("failed")]
    out: list[ev.Event] = []
    for r in reports:
        if r.layer == "breaker":
            out.append(ev.BreakerTripped(breaker=r.trigger, reason=r.action))
            continue
        if r.details.get("failed"):
            out.append(ev.Error("compaction", r.action, retryable=True))
            continue
        usage = r.details.get("usage")
        c = ev.Compaction(layer=r.layer, trigger=r.trigger, tokens_before=r.tokens_before,
                          tokens_after=r.tokens_after, duration_s=round(r.duration_s, 4),
                          transcript_path=r.transcript_path, action=r.action, timestamp=clock.now(),
                          cache=cache_figures(r.details), usage=dict(usage) if isinstance(usage, dict) else None)
        if before is not None and after is not None and r is acted[-1]:
            c.parts = parts_of(before, after, [a.layer for a in acted], pipeline)
        out.append(c)
    return out
