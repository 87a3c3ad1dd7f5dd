"""A deterministic replay report of the engine's shape (issue 13 §2), for the replay screen's tests.

Two sessions under `none`, `cc` and `ctxtui` at an 80,000-token window. Context grows by a fixed
step per request; `cc` auto-compacts near the window, `ctxtui` also clears old results now and
then; dollars are a simple function of the context (reads at 0.1×, the new tail written at 1.25×
of $3/M), each re-read $0.02 (ctxtui loses content twice per compaction, cc once). The numbers
only need to be plausible and fixed, not true.
"""
from __future__ import annotations

import copy

from agent_core.replay.report_model import ReplayReport

WINDOW = 80_000
RATE = 3e-6           # $ per input token
POLICIES = ("none", "cc", "ctxtui")


def _series(requests: int, step: int, policy: str) -> tuple[list[int], list[list]]:
    """Context per request and the compaction markers of one policy."""
    context, markers = [], []
    tokens = 6_000
    for i in range(requests):
        if i:
            tokens += step
        if policy == "cc" and tokens > int(WINDOW * 0.9):
            tokens = 18_000
            markers.append([i, "autocompact"])
        elif policy == "ctxtui":
            if tokens > int(WINDOW * 0.8):
                tokens = 15_000
                markers.append([i, "autocompact"])
            elif i and i % 12 == 0:
                tokens -= step * 3
                markers.append([i, "microcompact"])
        context.append(tokens)
    return context, markers


def _policy(requests: int, step: int, policy: str, users: int, refs: int) -> dict:
    context, markers = _series(requests, step, policy)
    rewritten = {i for i, _ in markers}
    read = write = 0.0
    cost_cum, total = [], 0.0
    prev = 0
    for i, tokens in enumerate(context):
        if i in rewritten or i == 0:
            w, r = tokens, 0
        else:
            w, r = max(0, tokens - prev), min(tokens, prev)
        write += w * RATE * 1.25
        read += r * RATE * 0.1
        total = write + read
        cost_cum.append(round(total, 6))
        prev = tokens
    layers: dict[str, int] = {}
    for _, layer in markers:
        layers[layer] = layers.get(layer, 0) + 1
    overflows = sum(1 for t in context if t > WINDOW)
    lost = {"none": 0, "cc": 2 * len(markers), "ctxtui": len(markers)}[policy]
    uses = refs // 2
    rereads = min(uses, {"none": 0, "cc": len(markers), "ctxtui": 2 * len(markers)}[policy])
    return {
        "cost_usd": round(total, 6),
        "cost_by_bucket": {"cache_write": round(write, 6), "cache_read": round(read, 6)},
        "compaction_cost_usd": round(0.012 * layers.get("autocompact", 0), 6),
        "overflows": overflows,
        "compactions": layers,
        "cache_hit_rate": round(read / RATE / 0.1 / max(1.0, read / RATE / 0.1 + write / RATE / 1.25), 4),
        "user_messages_kept": max(0, users - lost), "user_messages_total": users,
        "references_kept": max(0, refs - lost), "references_total": refs,
        "content_kept": uses - rereads, "content_total": uses, "rereads": rereads,
        "reread_usd": round(0.02 * rereads, 6),
        "series": {"context": context, "cost_cum": cost_cum, "markers": markers},
    }


def _session(path: str, requests: int, step: int, users: int, refs: int, errors: tuple[float, float],
             agent_id: str | None = None, skipped: int = 0) -> dict:
    return {"path": path, "model": "claude-sonnet-4-5", "requests": requests, "window": WINDOW,
            "agent_id": agent_id, "skipped_lines": skipped,
            "validation": {"cache_read_error_pct": errors[0], "cache_write_error_pct": errors[1]},
            "policies": {p: _policy(requests, step, p, users, refs) for p in POLICIES}}


def _build() -> dict:
    sessions = [
        _session("/logs/proj/5f1e2d3c-aaaa-4000-8000-000000000001.jsonl", 60, 1_700, 14, 40, (1.8, 3.2)),
        _session("/logs/proj/5f1e2d3c-aaaa-4000-8000-000000000001/subagents/agent-7b2c.jsonl", 30, 2_600, 4, 12,
                 (0.6, 2.1), agent_id="agent-7b2c", skipped=2),
    ]
    totals = {p: {"cost_usd": round(sum(s["policies"][p]["cost_usd"] for s in sessions), 6),
                  "overflows": sum(s["policies"][p]["overflows"] for s in sessions),
                  "net_cost_usd": round(sum(s["policies"][p]["cost_usd"] + s["policies"][p]["reread_usd"]
                                            for s in sessions), 6)} for p in POLICIES}
    return {"sessions": sessions, "totals": totals, "window": WINDOW, "ttl": "5m",
            "limits": ["Cannot see how behaviour would change under another policy (re-reads, longer runs).",
                       "Summaries are sized, not written: their content is not judged."]}


_REPORT = _build()


def fixture_report() -> dict:
    """A fresh copy each call, so a test that mutates it cannot change another's."""
    return copy.deepcopy(_REPORT)


def fixture_load(options, progress) -> ReplayReport:
    """A loader like `run_replay`: reports progress, then returns the fixture."""
    progress("reading 5f1e2d3c-aaaa-4000-8000-000000000001.jsonl", 0.5)
    progress("replaying 2 sessions", 1.0)
    return ReplayReport.from_json(fixture_report())
