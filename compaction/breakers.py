"""Circuit breakers for automatic compaction (the summarizing stages, layers 5 and 6).

- failures: 3 consecutive failed compactions (transport errors, prompt-too-long after every retry,
  a rejected summary, a transcript that could not be written) stop automatic compaction for the
  session (CC: sessions with thousands of failures in a row wasted API calls).
- thrash: the context is back above the threshold within 3 turns of a compaction, 3 times in a
  row: compacting again would only burn money, so automatic compaction stops.
- a compaction that does not shrink the count is rejected by the pipeline; it counts as a failure.

A turn is one `Pipeline.run` (one model call). A trip holds until a compaction succeeds (manual
`/compact` still runs after a trip, and its success clears the trip and the streak) or `reset()`
(a resumed session starts reset; the trip stays in the log as an event). Every trip report says
what to do. State lives in `PipelineState.of("breakers")` as plain JSON values.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from compaction.report import CompactionReport

LAYER = "breaker"
WHAT_TO_DO = ("Run /compact [focus] to retry now, or /clear to start afresh; a compaction that succeeds, or "
              "resuming the session, turns automatic compaction back on.")


@dataclass(frozen=True)
class BreakerConfig:
    max_failures: int = 3        # consecutive failed compactions before auto-compaction stops
    thrash_turns: int = 3        # "refilled" means above the threshold within this many turns
    thrash_repeats: int = 3      # ... this many compactions in a row


def _report(kind: str, reason: str, trigger: str, tokens: int, **details: Any) -> CompactionReport:
    """A breaker report. `trigger` holds the breaker's name (failures | thrash | rejected), which is
    what the loop's BreakerTripped event shows; the compaction trigger is in details["trigger"]."""
    return CompactionReport(layer=LAYER, trigger=kind, action=reason, tokens_before=tokens,
                            tokens_after=tokens, details={"breaker": kind, "trigger": trigger, **details})


class Breakers:
    """A view over the JSON state dict; every method mutates it in place."""

    def __init__(self, state: dict[str, Any], config: BreakerConfig | None = None) -> None:
        self.s = state
        self.config = config or BreakerConfig()
        for k, v in (("turn", 0), ("failures", 0), ("tripped", None), ("tripped_by", None),
                     ("last_compaction_turn", None), ("refilled", False), ("refills", 0)):
            self.s.setdefault(k, v)

    # --- queries -----------------------------------------------------------------------------
    @property
    def tripped(self) -> str | None:
        """The reason automatic compaction is stopped, or None."""
        reason: str | None = self.s["tripped"]
        return reason

    def allows(self, trigger: str) -> bool:
        """Manual compaction is always allowed; automatic and reactive ones stop after a trip."""
        return trigger == "manual" or self.s["tripped"] is None

    # --- events ------------------------------------------------------------------------------
    def note_turn(self, tokens: int, threshold: int) -> CompactionReport | None:
        """Count one turn. Returns the thrash trip report when this turn completes the pattern."""
        s = self.s
        s["turn"] += 1
        lc = s["last_compaction_turn"]
        if lc is None or s["refilled"]:
            return None
        since = s["turn"] - lc
        if since <= self.config.thrash_turns:
            if tokens >= threshold:
                s["refilled"] = True
                s["refills"] += 1
                if s["refills"] >= self.config.thrash_repeats and s["tripped"] is None:
                    reason = (f"Automatic compaction stopped: the context refilled above the threshold "
                              f"({tokens:,} ≥ {threshold:,} tokens) within {self.config.thrash_turns} turns of a "
                              f"compaction {s['refills']} times in a row, so compacting again would not help. "
                              + WHAT_TO_DO)
                    s["tripped"], s["tripped_by"] = reason, "thrash"
                    return _report("thrash", reason, "auto", tokens, refills=s["refills"])
        else:
            s["refills"] = 0          # the last compaction held: the streak is broken
            s["last_compaction_turn"] = None
        return None

    def record_success(self) -> None:
        """A compaction that worked ends the failure streak and clears a trip (say a manual
        `/compact` after one): automatic compaction may run again, and count afresh."""
        s = self.s
        s["failures"] = 0
        if s["tripped"] is not None:
            s.update(tripped=None, tripped_by=None, refills=0)
        s["last_compaction_turn"] = s["turn"]   # opens the refill window; the streak carries on
        s["refilled"] = False

    def record_failure(self, why: str, trigger: str, tokens: int) -> CompactionReport | None:
        """Count a failed compaction; returns the trip report when this is the last one allowed."""
        s = self.s
        s["failures"] += 1
        if s["failures"] >= self.config.max_failures and s["tripped"] is None:
            reason = (f"Automatic compaction stopped after {s['failures']} failures in a row (last: {why}). "
                      "The history is unchanged. " + WHAT_TO_DO)
            s["tripped"], s["tripped_by"] = reason, "failures"
            return _report("failures", reason, trigger, tokens, failures=s["failures"])
        return None

    def reset(self) -> None:
        """Clear trips and counters (for example after the user changed model or settings)."""
        self.s.update(failures=0, tripped=None, tripped_by=None, refills=0, refilled=False,
                      last_compaction_turn=None)


def rejected_report(stage: str, why: str, trigger: str, tokens_before: int, tokens_after: int) -> CompactionReport:
    """A compaction refused because it did not help; the old history is kept."""
    action = f"Compaction by {stage} rejected: {why}. The history is unchanged."
    return _report("rejected", action, trigger, tokens_before, failed=True, why=why, stage=stage,
                   proposed_tokens=tokens_after)
