"""What the two summarizing stages (session memory, LLM compaction) share: their knobs, and the
steps both take to replace a history safely (transcript first, a failure report that keeps the
history, re-anchoring the count, checking the new history).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Sequence

from compaction.accounting.budget import REFERENCE_WINDOW
from compaction.entry import Entry, project
from compaction.layer_context import LayerContext
from compaction.report import CompactionReport, LayerResult
from compaction.accounting.tokens import Calibration, anchor_index, usage_total
from compaction.transcript import transcript_path, transcripts_dir, write_transcript
from compaction.validate import validate_history

# Token knobs left at None take CC's default, scaled down for small windows like budget.py does:
# min(default, default × window / 200,000). An explicit value is used as given.
DEFAULT_TOKENS = {
    "sm_min_tokens": 10_000,          # session memory: verbatim tail at least ...
    "sm_max_tokens": 40_000,          # ... and at most this many tokens
    "sm_early_min_tokens": 10_000,    # session memory under the threshold (it acts because reading less pays):
    "sm_early_max_tokens": 40_000,    # the same tail; a shorter one (2k-10k, issue 13) lost the reads asked for
                                      # next: 43-47 of 55 recalls from context against Claude Code's 48-49 (issue 49)
    "notes_max_tokens": 8_000,        # session notes rendered as the summary
    "recent_user_tokens": 20_000,     # LLM compaction: recent user messages kept verbatim
    "reinject_file_tokens": 5_000,    # re-attached file, each
    "reinject_total_tokens": 50_000,  # re-attached files, in all
}


@dataclass(frozen=True)
class SummarizeConfig:
    """Knobs of the summarizing stages (breaker knobs: `breakers.BreakerConfig`, passed to the
    pipeline as `PipelineConfig.extra["breakers"]`)."""
    session_memory: bool = True
    sm_min_text_messages: int = 5
    sm_min_tokens: int | None = None
    sm_max_tokens: int | None = None
    sm_early_min_tokens: int | None = None
    sm_early_max_tokens: int | None = None
    notes_max_tokens: int | None = None
    recent_user_tokens: int | None = None
    reinject_files: int = 5
    reinject_file_tokens: int | None = None
    reinject_total_tokens: int | None = None
    max_ptl_retries: int = 3
    ptl_fallback_fraction: float = 0.2
    require_transcript: bool = True   # no session folder → no compaction (nothing may be lost)

    def limit(self, name: str, window: int) -> int:
        value = getattr(self, name)
        if value is not None:
            return int(value)
        default = DEFAULT_TOKENS[name]
        return int(min(default, default * window / REFERENCE_WINDOW))


def failed(stage: str, ctx: LayerContext, why: str, entries: list[Entry], t0: float, **details: Any) -> LayerResult:
    """A failed attempt: the history is returned untouched (same list) and the report says why."""
    report = CompactionReport(layer=stage, trigger=ctx.trigger,
                              action=f"Compaction failed: {why}. The history is unchanged.",
                              tokens_before=ctx.tokens, tokens_after=ctx.tokens,
                              duration_s=time.monotonic() - t0,
                              details={"failed": True, "reason": why, **details})
    return LayerResult(entries, report)


def save_transcript(ctx: LayerContext, entries: Sequence[Entry], require: bool) -> tuple[str | None, str | None]:
    """(path, None) once the full history is on disk, or (None, why it could not be written).
    The stages are handed the projected view; the transcript keeps the whole working history."""
    if ctx.history is not None:
        entries = ctx.history
    if ctx.session_dir is None:
        if require:
            return None, "there is no session folder to save the transcript in, so the history cannot be replaced"
        return None, None
    if ctx.dry_run:
        return str(transcript_path(transcripts_dir(ctx.session_dir), ctx.trigger, ctx.now, reserve=False)), None
    try:
        path = write_transcript(transcripts_dir(ctx.session_dir), entries, ctx.trigger, now=ctx.now)
    except OSError as exc:
        return None, (f"the transcript could not be written ({exc.strerror or exc}); check that "
                      f"{transcripts_dir(ctx.session_dir)} is writable and the disk is not full")
    return str(path), None


def reanchor(entries: list[Entry], overhead: int, cal: Calibration | None = None) -> list[Entry]:
    """Kept entries still carry the usage of the old, longer context; shift the newest anchor so
    the count equals overhead + the (calibrated) estimate of the new history until the next
    response: the usage is cancelled in server tokens, the history put back in estimated ones."""
    i = anchor_index(entries)
    if i is None:
        return entries
    a = entries[i]
    out = list(entries)
    out[i] = a.with_meta(real_adjust=overhead - usage_total(a.usage),
                         usage_adjust=round((cal or Calibration()).weighted(entries[:i + 1])))
    return out


def check_new_history(new: list[Entry]) -> list[str]:
    return validate_history(project(new))
