"""A compaction preview: what `/compact [focus]` would do now, layer by layer, and what it would cost
and save — without doing it.

The engine runs on a copy of its state (`Pipeline.dry_copy`) that names the transcripts and saved
tool results it would write but writes none, so the history, the session log, the saved state and
the disk are as they were. The LLM summary is the one part a preview cannot know without paying for
it: its stage is handed a summarizer that calls no model and returns a summary of the size this
session's own summaries had (else the engine's own estimate), so the history it builds — recent
prompts kept, files re-attached — and the count after it are those of a summary of that size, and
the preview says so.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from statistics import median
from typing import Any, Sequence

from compaction import Entry, Pipeline
from compaction.accounting.cache_model import write_bucket
from compaction.cache_economics import MIN_SUMMARY_OUTPUT, SUMMARY_OUTPUT_SHARE, Reread
from compaction.layers.autocompact import AutoCompactStage
from compaction.loss_report import loss_report
from compaction.report import CompactionReport
from compaction.sized_summary import SizedSummarizer

from agent_core import events as ev
from agent_core.loop.compaction_parts import compaction_parts

FILLER = "This summary is sized, not written: a preview calls no model. "
BODY_SHARE = 0.25   # an estimated summary is at most this share of what it summarizes
SUMMARY_NOTE = ("(the summary the model would write: about {tokens:,} tokens, {source}. A preview calls no "
                "model, so its text is not known.)")


class PreviewError(Exception):
    """A preview that cannot be made now (a turn is running); the message says what to do."""


@dataclass(frozen=True)
class PreviewStep:
    """What one layer or stage would do: its own report, and the entries it would remove or clear."""
    layer: str
    action: str
    acted: bool                  # False: it would decline or be refused (`action` says why)
    tokens_before: int
    tokens_after: int
    removed: int = 0
    removed_tokens: int = 0
    cleared: int = 0
    cleared_tokens: tuple[int, int] = (0, 0)   # before, after

    def to_dict(self) -> dict[str, Any]:
        return {"layer": self.layer, "action": self.action, "acted": self.acted,
                "tokens_before": self.tokens_before, "tokens_after": self.tokens_after,
                "removed": self.removed, "removed_tokens": self.removed_tokens,
                "cleared": self.cleared, "cleared_tokens": list(self.cleared_tokens)}


@dataclass
class CompactionPreview:
    focus: str | None
    tokens_before: int
    tokens_after: int
    steps: list[PreviewStep] = field(default_factory=list)
    compaction: ev.Compaction | None = None   # the event a compaction now would carry (parts, loss), if it acts
    summary_tokens: int | None = None         # the LLM summary's assumed size (None: no LLM summary)
    summary_source: str = ""
    summary_usd: float | None = None          # the summary call, estimated
    rewrite_tokens: int = 0                   # cached tokens the next call would write instead of reading
    next_call_usd: float | None = None        # extra dollars on the next call (the rewrite and the summary call)
    saves_per_call_usd: float | None = None   # dollars each later call would save
    payback_calls: float | None = None        # later calls until the saving covers the cost (0: at once)
    cold: bool = False                        # the cache has gone cold: nothing cached would be rewritten
    reread_usd: float | None = 0.0            # re-reads it is expected to cause, as the layers priced them
    reread_tokens: int = 0                    # ... tokens of the results they would remove (0: none priced)
    note: str = ""                            # why nothing would change, when nothing would

    @property
    def acts(self) -> bool:
        return self.compaction is not None

    def to_dict(self) -> dict[str, Any]:
        """The headless `--compact --preview` object (docs/headless.md)."""
        c = self.compaction
        return {"type": "compaction_preview", "preview": True, "focus": self.focus,
                "acts": self.acts, "note": self.note,
                "tokens_before": self.tokens_before, "tokens_after": self.tokens_after,
                "steps": [s.to_dict() for s in self.steps],
                "summary_tokens": self.summary_tokens, "summary_source": self.summary_source or None,
                "summary_usd": _usd(self.summary_usd), "rewrite_tokens": self.rewrite_tokens,
                "next_call_usd": _usd(self.next_call_usd), "saves_per_call_usd": _usd(self.saves_per_call_usd),
                "payback_calls": None if self.payback_calls is None else round(self.payback_calls, 2),
                "cold": self.cold, "reread_usd": _usd(self.reread_usd), "reread_tokens": self.reread_tokens,
                "parts": dict(c.parts) if c is not None and c.parts is not None else None}


def _usd(x: float | None) -> float | None:
    return None if x is None else round(x, 6)


def priced_rereads(reports: Sequence[CompactionReport]) -> Reread:
    """What the layers that acted priced as re-reads (`details["cache"]`: `reread_usd`,
    `lost_tokens`, from cache_economics.reread_estimate), summed: each prices what it removes."""
    usd, tokens = 0.0, 0
    for r in reports:
        cache = r.details.get("cache")
        if not isinstance(cache, dict):
            continue
        lost = cache.get("lost_tokens")
        if isinstance(lost, int) and not isinstance(lost, bool) and lost > 0:
            usd += float(cache.get("reread_usd") or 0.0)
            tokens += lost
    return Reread(usd, tokens)


def summary_size(compactions: Sequence[ev.Compaction], threshold: int, body_tokens: int) -> tuple[int, str]:
    """(tokens, where the figure comes from): the median output of this session's LLM summaries,
    else the engine's own estimate of a summary at the threshold (cache_economics), at most
    `BODY_SHARE` of the `body_tokens` it would summarize (a short conversation, a short summary)."""
    sizes = [int(c.usage["output_tokens"]) for c in compactions
             if c.layer == "autocompact" and isinstance(c.usage, dict)
             and isinstance(c.usage.get("output_tokens"), int) and c.usage["output_tokens"] > 0]
    if sizes:
        n = len(sizes)
        return int(median(sizes)), f"the median of this session's {n:,} summar{'y' if n == 1 else 'ies'}"
    engine = max(MIN_SUMMARY_OUTPUT, int(SUMMARY_OUTPUT_SHARE * threshold))
    if engine > BODY_SHARE * body_tokens:
        return (max(1, int(BODY_SHARE * body_tokens)),
                f"estimated at {BODY_SHARE:.0%} of the {body_tokens:,} tokens it would summarize")
    return engine, (f"the engine's estimate: {SUMMARY_OUTPUT_SHARE:.0%} of the auto-compact threshold, "
                    f"at least {MIN_SUMMARY_OUTPUT:,}")


def _step(report: CompactionReport, before: list[Entry], after: list[Entry]) -> PreviewStep:
    acted = not report.details.get("failed") and after is not before
    p = compaction_parts(before, after, [report.layer]) if acted else {}
    cleared = p.get("cleared_tokens") or [0, 0]
    layer = str(report.details.get("stage") or report.layer)   # a refusal is reported by the breakers
    return PreviewStep(layer, report.action, acted, report.tokens_before, report.tokens_after,
                       int(p.get("removed_count") or 0), int(p.get("removed_tokens") or 0),
                       int(p.get("cleared_count") or 0), (int(cleared[0]), int(cleared[1])))


def preview_stages(pipeline: Pipeline, summary_tokens: int) -> tuple[list, SizedSummarizer]:
    """The pipeline's stages with the LLM stage's summarizer replaced by one that calls no model."""
    sized = SizedSummarizer(summary_tokens, FILLER, model="preview")
    stages = [AutoCompactStage(sized, s.config, s.read_file) if isinstance(s, AutoCompactStage) else s
              for s in pipeline.stages]
    return stages, sized


async def preview_compaction(pipeline: Pipeline, entries: list[Entry], focus: str | None, *,
                             summary: tuple[int, str], cached_tokens: int, now: float) -> CompactionPreview:
    """What `pipeline.compact(entries, "manual", focus)` would do at `now`; `summary` the LLM
    summary's assumed (tokens, source), `cached_tokens` what the next request would read from the
    cache (0 when cold). Nothing of `pipeline` or `entries` changes."""
    stages, sized = preview_stages(pipeline, summary[0])
    dry = pipeline.dry_copy(stages)
    steps: list[PreviewStep] = []
    dry.on_step = lambda rep, before, after: steps.append(_step(rep, before, after))
    tokens_before = pipeline.view(entries, now)[1]
    out = await dry.compact(entries, trigger="manual", instructions=focus, now=now)
    acted = [r for r in out.reports if r.layer != "breaker" and not r.details.get("failed")]
    preview = CompactionPreview(focus, tokens_before, out.tokens if acted else tokens_before, steps)
    cfg = pipeline.config
    rates = cfg.cache_rates if cfg.cache_rates_known else None
    llm = next((r for r in acted if r.layer == "autocompact"), None)
    usage: dict[str, int] | None = None
    if llm is not None:
        preview.summary_tokens, preview.summary_source = summary
        prompt = sized.calls[-1] if sized.calls else 0
        usage = {"input_tokens": 0, "cache_read_input_tokens": cached_tokens,
                 "cache_creation_input_tokens": max(0, llm.tokens_before - cached_tokens) + prompt,
                 "output_tokens": summary[0]}
        if rates is not None:
            preview.summary_usd = (cached_tokens * rates.cache_read + usage["output_tokens"] * rates.output
                                   + usage["cache_creation_input_tokens"] * rates.get(write_bucket(cfg.cache_ttl)))
    if not acted:
        failed = [r for r in out.reports if r.details.get("failed")]
        preview.note = (failed[-1].action if failed else
                        f"No layer would shrink the context now ({tokens_before:,} tokens).")
        return preview
    verdict = pipeline.dry_copy().verdict_for(entries, preview.tokens_after, preview.summary_usd or 0.0, now,
                                              lost=priced_rereads(acted))
    preview.rewrite_tokens = verdict.rewrite_tokens
    preview.cold = cached_tokens == 0
    preview.reread_tokens = verdict.lost_tokens
    preview.reread_usd = verdict.reread_usd if rates is not None else None
    if rates is not None:
        preview.next_call_usd = verdict.cost_usd
        preview.saves_per_call_usd = verdict.saves_per_call_usd
        preview.payback_calls = verdict.payback_calls
    last = acted[-1]
    parts = compaction_parts(entries, out.entries, [r.layer for r in acted])
    parts["loss"] = loss_report(entries, out.view)
    if llm is not None:
        note = SUMMARY_NOTE.format(tokens=summary[0], source=summary[1])
        parts["added"] = [{**a, "text": note} if a.get("kind") == "summary" else a for a in parts["added"]]
    preview.compaction = ev.Compaction(layer=last.layer, trigger="manual", tokens_before=tokens_before,
                                       tokens_after=preview.tokens_after, transcript_path=last.transcript_path,
                                       action=last.action, timestamp=now, cache=verdict.details(), parts=parts,
                                       usage=usage)
    return preview
