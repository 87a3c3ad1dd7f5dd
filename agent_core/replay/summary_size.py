"""How long a replayed summary is. Replay writes no summary: it only needs its size, which sets
what the summary call outputs and what the next requests carry.

From the log's own compactions when it has them (the median of their summary sizes: the summary
call's output, else the summary message the log restarted from; for a ctxtui log, whose compaction
records carry no size, the output of its own summary calls: `Trajectory.compaction_calls` of
purpose `compaction`); otherwise a
default range — a Claude Code summary of a long coding session is typically a few thousand
tokens — of which the middle is used and the range is stated in the report's limits.
"""
from __future__ import annotations

from dataclasses import dataclass
from statistics import median

from compaction.summary_prompt import build_summary_prompt
from compaction.accounting.tokens import estimate_message, estimate_text

from agent_core.logs.trajectory import Request, Trajectory

DEFAULT_RANGE = (2_000, 4_000, 8_000)      # low, mid, high
MAX_SHARE = 0.25                           # never more than this share of the window


@dataclass(frozen=True)
class SummarySize:
    tokens: int
    source: str          # "log" | "default"
    low: int
    high: int

    def describe(self) -> str:
        if self.source == "log":
            return f"summaries sized {self.tokens:,} tokens, the median of the log's own compactions"
        return (f"summaries sized {self.tokens:,} tokens (a default; the log has no compaction to size them "
                f"from; a real one is typically {self.low:,}–{self.high:,})")


def logged_summary_tokens(request: Request) -> int | None:
    """The size of the summary the log's compaction before `request` wrote: the compaction call's
    output when the log holds it, else the summary message the context restarted from (Claude Code
    2.1.328 logs no summary call, only its `isCompactSummary` record); None without a compaction."""
    c = request.compaction_before
    if c is None:
        return None
    if c.summary_tokens:
        return c.summary_tokens
    # the summary's own text: its calibrated size also holds what Claude Code re-attached after it
    # (file attachments the trajectory does not hold as messages)
    tokens = sum(estimate_message({"content": m.blocks}) if m.blocks else max(0, m.tokens)
                 for m in request.context_after_compaction or () if m.kind == "summary")
    return tokens or None


def call_summary_tokens(trajectory: Trajectory) -> list[int]:
    """The outputs of the log's own summary calls (a ctxtui log's `compaction` side calls; its
    `memory` calls write session notes, not a summary)."""
    return [n for c in trajectory.compaction_calls if c.purpose == "compaction"
            and (n := int(c.usage.get("output", 0) or 0)) > 0]


def summary_size(trajectory: Trajectory, window: int) -> SummarySize:
    cap = max(200, int(window * MAX_SHARE))
    sizes = [n for n in map(logged_summary_tokens, trajectory.requests) if n] or call_summary_tokens(trajectory)
    if sizes:
        mid = int(median(sizes))
        return SummarySize(min(mid, cap), "log", min(sizes), max(sizes))
    low, mid, high = DEFAULT_RANGE
    return SummarySize(min(mid, cap), "default", min(low, cap), min(high, cap))


def summary_prompt_tokens() -> int:
    """What the summary request adds after the conversation (the engine's own prompt)."""
    return estimate_text(build_summary_prompt(None))
