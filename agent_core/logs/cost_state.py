"""Claude Code's cumulative cost record (`{"type":"cost-state",...}`, written by 2.1.328 and later).

Claude Code logs no assistant record for its own side calls — the `/compact` and auto-compact
summary call above all — so the assistant records alone miss what those cost (3–20% of a session
with compactions). The cost-state record holds what the process spent in the whole session, per
model, every call included:

    {"type": "cost-state", "sessionId": "...", "totalCostUSD": 0.0931,
     "modelUsage": {"claude-sonnet-4-6": {"inputTokens": 1595, "outputTokens": 139,
       "cacheReadInputTokens": 21272, "cacheCreationInputTokens": 21297,
       "cacheCreationEphemeral5mInputTokens": 21297, "cacheCreationEphemeral1hInputTokens": 0,
       "thinkingTokens": 0, "webSearchRequests": 0, "costUSD": 0.0931}}, ...}

It is cumulative: a log may hold several, and the last one is the session's total. Only replay reads
it (trajectory_claude_code.py, as the recorded figure); the usage report, watch and the status line
count assistant records and never parse it (their line filter does not even decode it), so nothing
is counted twice. `outputTokens` is taken to include the thinking tokens, as the API's
`output_tokens` does (`thinkingTokens` is not added).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

COST_STATE = "cost-state"
# modelUsage's keys -> the five buckets of agent_core.pricing.cost.BUCKETS
_KEYS = {"input": "inputTokens", "output": "outputTokens", "cache_read": "cacheReadInputTokens",
         "cache_write_5m": "cacheCreationEphemeral5mInputTokens",
         "cache_write_1h": "cacheCreationEphemeral1hInputTokens"}
MAX_TOKENS = 10**12          # a cumulative count above this is a damaged record


@dataclass(frozen=True)
class CostState:
    """One cost-state record: the session's usage per model in five buckets, Claude Code's own
    dollars per model and in all (None when the record has none)."""
    session_id: str | None
    usage: dict[str, dict[str, int]] = field(default_factory=dict)
    model_usd: dict[str, float] = field(default_factory=dict)
    total_usd: float | None = None


def _count(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return int(value) if 0 <= value <= MAX_TOKENS else None


def _usd(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        return None
    return float(value)


def buckets_of_model_usage(entry: dict) -> dict[str, int] | None:
    """One model's `modelUsage` entry in five buckets; None when a count is not a count. Without the
    5m/1h split, every cache write is a 5-minute one (what an older record's total means)."""
    out: dict[str, int] = {}
    for bucket, key in _KEYS.items():
        n = _count(entry.get(key, 0))
        if n is None:
            return None
        out[bucket] = n
    written = _count(entry.get("cacheCreationInputTokens", 0))
    if written is None:
        return None
    out["cache_write_5m"] += max(0, written - out["cache_write_5m"] - out["cache_write_1h"])
    return out


def cost_state_of(obj: dict) -> CostState | None:
    """The record as a `CostState`, or None when `obj` is not a readable cost-state record (a model
    whose counts are damaged is left out; a record with no readable model is None)."""
    if obj.get("type") != COST_STATE or not isinstance(obj.get("modelUsage"), dict):
        return None
    usage: dict[str, dict[str, int]] = {}
    dollars: dict[str, float] = {}
    for model, entry in obj["modelUsage"].items():
        if not isinstance(model, str) or not model or not isinstance(entry, dict):
            continue
        buckets = buckets_of_model_usage(entry)
        if buckets is None:
            continue
        usage[model] = buckets
        usd = _usd(entry.get("costUSD"))
        if usd is not None:
            dollars[model] = usd
    if not usage:
        return None
    sid = obj.get("sessionId")
    return CostState(sid if isinstance(sid, str) and sid else None, usage, dollars, _usd(obj.get("totalCostUSD")))
