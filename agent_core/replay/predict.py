"""`predict_cost(log, policy, window)`: one recorded session's dollars as replay predicts them under
one policy, beside what the log says the session paid — for a bench that runs the clients live and
checks replay against what they paid (bench/vs_claude_code.py), and for scripts.

    p = predict_cost("~/.claude/projects/-ws/SESSION.jsonl", "ctxtui", 100_000)
    p.predicted_usd, p.recorded_usd, p.recorded_source     # 1.84, 2.07, "cost-state"

Everything the report says for that policy, summed over the log's trajectories (a Claude Code main
log and its sub-agents; one trajectory for a ctxtui log): `predicted_usd` is the dollars net of
re-reads (`net_cost_usd`: the policy's requests and summary calls, plus the round trips of the
re-reads replay added); `recorded_usd` the log's recorded figure (replay/recorded.py: for a Claude
Code log with a cost-state record, every call of the session, its compaction calls included). Only
the named policy is replayed, so a call costs one policy's run, not four.

Replay keeps the log's own requests, so a prediction across clients carries the recorded client's
harness: its fixed head above all (`head_tokens` replaces it), and also its per-message extras
(Claude Code's `<system-reminder>` blocks, its `Read` output format) and its agent's own choices.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from agent_core.replay.options import BUILTIN, PolicySpec, ReplayOptions, parse_policy
from agent_core.replay.report_model import ReplayReport
from agent_core.replay.runner import load, run_replay


@dataclass(frozen=True)
class Prediction:
    path: str
    policy: str
    window: int | None                 # the window replayed at (None: the log had no request)
    predicted_usd: float | None        # the policy's dollars net of re-reads (None: a model has no price)
    recorded_usd: float | None         # what the log says the session paid (None: unknown)
    recorded_source: str               # cost-state | requests | none
    claude_code_usd: float | None      # a cost-state's own totalCostUSD
    cost_usd: float | None             # the policy's requests and summary calls, without the added re-reads
    reread_usd: float | None
    rereads: int                       # uses of lost content (each a re-read)
    rereads_logged: int                # of them, re-reads the log made itself
    summary_calls: int
    compactions: dict[str, int]
    requests: int
    notes: tuple[str, ...]
    report: ReplayReport               # the whole report, for anything else

    @property
    def ratio(self) -> float | None:
        """predicted ÷ recorded."""
        if self.predicted_usd is None or not self.recorded_usd:
            return None
        return self.predicted_usd / self.recorded_usd


def _spec(policy: str | PolicySpec) -> PolicySpec:
    if isinstance(policy, PolicySpec):
        return policy
    return PolicySpec(policy, policy) if policy in BUILTIN else parse_policy(policy)


def _sum(values: list[float | None]) -> float | None:
    return None if any(v is None for v in values) else round(sum(v for v in values if v is not None), 6)


def predict_cost(log: str | Path, policy: str | PolicySpec = "ctxtui", window: int | None = None, *,
                 ttl: str = "5m", head_tokens: int | None = None) -> Prediction:
    """Replay `log` (a session log, Claude Code's or ctxtui's, or a folder of them) under `policy`
    (a preset name, `server`, a variant `NAME:KEY=VALUE,...` or a `PolicySpec`) at `window` (None:
    the log's own, as `ctxtui replay` picks it). `head_tokens`: the fixed head (system prompt and
    tool definitions) of the client the prediction stands for, in place of the log's — Claude
    Code's is ~21,500 tokens, ctxtui's ~1,700, and every request reads it — so a Claude Code log
    replayed under `ctxtui` can be priced as ctxtui would send it (the validation figures then
    compare that head with the log's). Raises FileNotFoundError for a missing path,
    ReplayUsageError for a policy that is not one."""
    path = Path(log).expanduser()
    if not path.exists():
        raise FileNotFoundError(str(path))
    spec = _spec(policy)
    options = ReplayOptions((path,), (spec,), window, ttl)
    trajectories = None
    if head_tokens is not None:
        head = max(0, int(head_tokens))
        trajectories = [replace(t, overhead_tokens=head, head_cached_tokens=min(t.head_cached_tokens, head))
                        for t in load(options, None)]
    report = run_replay(options, trajectories=trajectories)
    results = [s.policies[spec.name] for s in report.sessions]
    sources = {src for s in report.sessions if (src := s.recorded_source) is not None and src != "main-cost-state"}
    compactions: dict[str, int] = {}
    for r in results:
        for layer, n in r.compactions.items():
            compactions[layer] = compactions.get(layer, 0) + n
    return Prediction(
        path=str(path), policy=spec.name,
        window=report.sessions[0].window if report.sessions else window,
        predicted_usd=_sum([r.net_cost_usd for r in results]),
        recorded_usd=_sum([s.recorded_cost_usd for s in report.sessions if s.recorded_source != "main-cost-state"]),
        recorded_source=" + ".join(sorted(sources)) or "none",
        claude_code_usd=_sum([s.claude_code_cost_usd for s in report.sessions
                              if s.recorded_source == "cost-state"]) if "cost-state" in sources else None,
        cost_usd=_sum([r.cost_usd for r in results]),
        reread_usd=_sum([r.reread_usd for r in results]),
        rereads=sum(r.rereads or 0 for r in results),
        rereads_logged=sum(r.rereads_logged or 0 for r in results),
        summary_calls=sum(r.summary_calls or 0 for r in results),
        compactions=compactions,
        requests=sum(s.requests or 0 for s in report.sessions),
        notes=report.limits,
        report=report,
    )
