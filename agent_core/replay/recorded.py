"""What a recorded session paid, as far as its log tells: the report's "recorded" figure, the one a
policy's prediction is compared with.

- A Claude Code main log with a `cost-state` record (2.1.328 on, agent_core/logs/cost_state.py):
  the usage it holds — every call of the session, sub-agents, side calls and the compaction calls
  included, which have no assistant record — priced by ctxtui's own rates (genai-prices' base
  rates for each model at the session's last request; the record is cumulative, so no request's
  long-context tier can be told apart). Claude Code's own `totalCostUSD` is kept beside it and a
  disagreement of more than 1% is noted. The session's sub-agent logs are inside that figure: theirs
  is None (source `main-cost-state`), so the figures of one session add up once.
- Any other log: its own requests and logged side calls at their dates' prices (`logged_cost_usd`,
  what `usage` shows). A Claude Code log that compacted but logged no compaction call (no
  cost-state, no compaction sub-agent) misses those calls' dollars, and the report says so.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from agent_core.logs.trajectory import Trajectory
from agent_core.pricing.pricer import Pricer

COST_STATE, MAIN_COST_STATE, REQUESTS = "cost-state", "main-cost-state", "requests"
DISAGREE = 0.01          # Claude Code's own total and ctxtui's price of its usage differ by more: noted


@dataclass(frozen=True)
class Recorded:
    usd: float | None                    # None: unknown, or counted in the main log's cost-state
    source: str                          # cost-state | main-cost-state | requests
    claude_code_usd: float | None = None  # the cost-state's own totalCostUSD
    note: str | None = None


def cost_state_usd(traj: Trajectory, pricer: Pricer) -> float | None:
    """The trajectory's cost-state usage at ctxtui's rates (module docstring); a model without price
    data counts Claude Code's own dollars for it, or makes the whole None when it has none."""
    state = traj.cost_state
    if state is None:
        return None
    when = max((r.timestamp for r in traj.requests), default=None)
    total = 0.0
    for model, usage in state.usage.items():
        rates = pricer.rates(model, when)
        if rates is None:
            own = state.model_usd.get(model)
            if own is None:
                return None
            total += own
            continue
        total += sum(rates.get(bucket, 0.0) * n for bucket, n in usage.items())
    return total


def recorded(traj: Trajectory, logged: float | None, pricer: Pricer, *, covered: bool = False,
             logged_session: float | None = None) -> Recorded:
    """The recorded figure of one trajectory. `covered`: a sub-agent whose main log has a
    cost-state. `logged_session`: the logged dollars of every trajectory of the session (the
    main's and its sub-agents'), to say how much the cost-state holds beyond them."""
    if traj.agent_id is not None and covered:
        return Recorded(None, MAIN_COST_STATE)
    usd = cost_state_usd(traj, pricer) if traj.source == "claude_code" else None
    if usd is not None and traj.cost_state is not None:
        own = traj.cost_state.total_usd
        notes = []
        if own is not None and abs(usd - own) > DISAGREE * max(own, usd):
            notes.append(f"Claude Code's own total ${own:,.4f} differs from its usage at ctxtui's rates "
                         f"(${usd:,.4f}, {100 * (usd - own) / own if own else 100:+.1f}%)")
        base = logged if logged_session is None else logged_session
        if base is not None and usd > base:
            notes.append(f"${usd - base:,.4f} ({100 * (usd - base) / usd:.1f}%) of it is in calls with no "
                         f"assistant record (its compaction calls and any side call)")
        return Recorded(usd, COST_STATE, own, "; ".join(notes) or None)
    note = None
    compacted = sum(1 for r in traj.requests if r.compaction_before is not None)
    if traj.source == "claude_code" and compacted and not traj.compaction_calls:
        note = (f"recorded dollars exclude its {compacted} compaction call{'s' if compacted > 1 else ''}: "
                f"the log has no record of them (Claude Code 2.1.328 and later write a cost-state record "
                f"that holds them)")
    return Recorded(logged, REQUESTS, None, note)


def covered_sessions(trajectories: Sequence[Trajectory]) -> set[str]:
    """The sessions whose main Claude Code log has a cost-state (their sub-agents are inside it)."""
    return {t.session_id for t in trajectories
            if t.agent_id is None and t.source == "claude_code" and t.cost_state is not None}
