"""Tokens and dollars over session-log records, per model, session and day (`ctxtui usage`).

Every response is priced on its own through `agent_core.pricing.cost.price_buckets` (tiered prices depend
on one request's input). That call costs ~0.1 ms, too slow for a log with 100,000 responses, so
`Pricer` learns each model's per-token rates from it once and proves where they hold: genai-prices
prices are linear in each bucket until the request's total input crosses the model's first tier.
Below that limit a response is priced with the learned rates (the same number); above it, or when
the rates cannot be learned, `price_buckets` is called directly.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable

from agent_core.pricing.cost import BUCKETS, shown_price
from agent_core.logs.records import CompactionRecord, Record, UsageRecord

TOKEN_KEYS = {b: f"{b}_tokens" for b in BUCKETS}
_PROBE_MAX = 1 << 22          # ~4M tokens of input: beyond any context window
_REL_TOL = 1e-9


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= _REL_TOL * max(1.0, abs(a), abs(b))


class Pricer:
    """`price(model, buckets) -> float | None`, equal to `price_buckets` but fast for big logs."""

    def __init__(self, price: Callable[[str, dict[str, int]], float | None] = shown_price) -> None:
        self._price = price
        self._models: dict[str, tuple[float, dict[str, float], int] | None] = {}
        self.exact_calls = 0

    def __call__(self, model: str, buckets: dict[str, int]) -> float | None:
        try:
            learned = self._models[model]
        except KeyError:
            learned = self._models[model] = self._learn(model)
        if learned is None:
            return self._exact(model, buckets)
        const, r, limit = learned
        i, w5, w1, cr = (buckets.get("input", 0), buckets.get("cache_write_5m", 0), buckets.get("cache_write_1h", 0),
                         buckets.get("cache_read", 0))
        if i + w5 + w1 + cr > limit:
            return self._exact(model, buckets)
        return (const + r["input"] * i + r["cache_write_5m"] * w5 + r["cache_write_1h"] * w1 + r["cache_read"] * cr
                + r["output"] * buckets.get("output", 0))

    def _exact(self, model: str, buckets: dict[str, int]) -> float | None:
        self.exact_calls += 1
        return self._price(model, buckets)

    def _learn(self, model: str) -> tuple[float, dict[str, float], int] | None:
        """(per-request constant, per-token rate per bucket, largest total input where they hold),
        or None when the model is unknown or its prices are not linear even for small requests."""
        const = self._price(model, dict.fromkeys(BUCKETS, 0))
        if const is None:
            return None
        rates: dict[str, float] = {}
        for k in BUCKETS:
            p = self._price(model, {**dict.fromkeys(BUCKETS, 0), k: 1000})
            if p is None:
                return None
            rates[k] = (p - const) / 1000

        def linear(total_input: int) -> bool:
            b = _probe(total_input)
            p = self._price(model, b)
            return p is not None and _close(p, const + sum(rates[k] * b[k] for k in BUCKETS))

        lo = 1000
        if not linear(lo):
            return None
        hi = lo * 2
        while hi <= _PROBE_MAX and linear(hi):
            lo, hi = hi, hi * 2
        if hi > _PROBE_MAX:
            return const, rates, lo
        while hi - lo > 1:                    # the first tier starts in (lo, hi]
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if linear(mid) else (lo, mid)
        return const, rates, lo


def _probe(total_input: int) -> dict[str, int]:
    """A request touching every bucket whose total input is exactly `total_input`."""
    k = total_input // 8
    return {"input": total_input - 3 * k, "cache_write_5m": k, "cache_write_1h": k, "cache_read": k,
            "output": total_input}


@dataclass
class Tally:
    """Tokens per bucket, requests, and dollars; `unpriced` counts requests with no known price."""
    tokens: dict[str, int] = field(default_factory=lambda: dict.fromkeys(BUCKETS, 0))
    requests: int = 0
    cost: float = 0.0
    unpriced: int = 0

    def add(self, buckets: dict[str, int], cost: float | None, sign: int = 1) -> None:
        t = self.tokens
        for k in BUCKETS:
            t[k] += sign * buckets.get(k, 0)
        self.requests += sign
        if cost is None:
            self.unpriced += sign
        else:
            self.cost += sign * cost

    def merge(self, other: "Tally") -> "Tally":
        for k in BUCKETS:
            self.tokens[k] += other.tokens[k]
        self.requests += other.requests
        self.cost += other.cost
        self.unpriced += other.unpriced
        return self

    @property
    def cost_usd(self) -> float | None:
        return None if self.unpriced else self.cost

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {TOKEN_KEYS[k]: self.tokens[k] for k in BUCKETS}
        d["total_tokens"] = sum(self.tokens.values())
        d["requests"] = self.requests
        d["cost_usd"] = _money(self.cost_usd)
        if self.unpriced:
            d["priced_cost_usd"] = _money(self.cost)
        return d


def _money(x: float | None) -> float | None:
    """Dollars for the JSON report: None (null) when unknown or not finite, which JSON cannot say."""
    return None if x is None or not math.isfinite(x) else round(x, 6)


def iso(ts: float | None) -> str | None:
    return None if ts is None else datetime.fromtimestamp(ts, timezone.utc).isoformat().replace("+00:00", "Z")


def project_of(path: str) -> str:
    """Claude Code: the project folder (`projects/<project>/<session>.jsonl`, sub-agent logs one
    level deeper); ctxtui: the workspace's state folder holding `sessions/<id>.jsonl` (or, for logs
    of older versions, the folder holding `.ctxtui/sessions/`)."""
    p = Path(path)
    parent = p.parent.parent.parent if p.parent.name == "subagents" else p.parent
    if parent.name == "sessions" and parent.parent.name == ".ctxtui":
        return parent.parent.parent.name
    if parent.name == "sessions":
        return parent.parent.name
    return parent.name


def _sum(tallies: Iterable[Tally]) -> Tally:
    out = Tally()
    for t in tallies:
        out.merge(t)
    return out


@dataclass
class SessionSummary:
    """One session; its tokens are kept per (model, day) cell, the finest grouping any view needs,
    so each record updates one tally and the per-model and per-day views are sums of cells."""
    session_id: str
    source: str
    project: str
    cells: dict[tuple[str, str], Tally] = field(default_factory=dict)
    models: set[str] = field(default_factory=set)
    first: float | None = None
    last: float | None = None
    subagent_requests: int = 0
    last_context_tokens: int = 0
    compactions: dict[str, CompactionRecord] = field(default_factory=dict)

    @property
    def tally(self) -> Tally:
        return _sum(self.cells.values())

    def see(self, ts: float | None) -> None:
        if ts is not None:
            self.first = ts if self.first is None else min(self.first, ts)
            self.last = ts if self.last is None else max(self.last, ts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id, "source": self.source, "project": self.project,
            "first_timestamp": iso(self.first), "last_timestamp": iso(self.last),
            "models": sorted(self.models), **self.tally.to_dict(),
            "subagent_requests": self.subagent_requests, "last_context_tokens": self.last_context_tokens,
            "compactions": [compaction_dict(c) for c in self.compactions.values()],
        }


def compaction_dict(c: CompactionRecord) -> dict[str, Any]:
    return {"timestamp": iso(c.timestamp), "trigger": c.trigger, "layer": c.layer,
            "tokens_before": c.tokens_before, "tokens_after": c.tokens_after, "is_sidechain": c.is_sidechain}


class UsageReport:
    """Accumulates records; `since` drops records before that day (days are local unless utc)."""

    def __init__(self, since: date | None = None, utc: bool = False, pricer: Pricer | None = None) -> None:
        self.since = since
        self.tz = timezone.utc if utc else None
        self.price = pricer or Pricer()
        self.sessions: dict[str, SessionSummary] = {}
        self.files = 0
        self.skipped_lines = 0
        self._days: dict[int, str] = {}

    def day(self, ts: float | None) -> str:
        if ts is None:
            return "unknown"
        slot = int(ts // 900)         # every time zone's offset is a whole number of quarter hours
        d = self._days.get(slot)
        if d is None:
            d = self._days[slot] = datetime.fromtimestamp(ts, self.tz).date().isoformat()
        return d

    def _keep(self, ts: float | None) -> bool:
        return self.since is None or (ts is not None and self.day(ts) >= self.since.isoformat())

    def _session(self, rec: Record) -> SessionSummary:
        s = self.sessions.get(rec.session_id)
        if s is None:
            s = self.sessions[rec.session_id] = SessionSummary(rec.session_id, rec.source, project_of(rec.path))
        return s

    def add(self, rec: Record) -> None:
        if isinstance(rec, UsageRecord):
            self._usage(rec)
        elif self._keep(rec.timestamp):
            s = self._session(rec)
            s.compactions[rec.key] = rec
            s.see(rec.timestamp)

    def add_all(self, records: Iterable[Record]) -> None:
        for rec in records:
            self.add(rec)

    def _usage(self, rec: UsageRecord, sign: int = 1) -> None:
        if rec.replaces is not None and sign > 0:
            self._usage(rec.replaces, -1)
        if not self._keep(rec.timestamp):
            return
        s = self._session(rec)
        cell = (rec.model, self.day(rec.timestamp))
        t = s.cells.get(cell)
        if t is None:
            t = s.cells[cell] = Tally()
        t.add(rec.buckets, self.price(rec.model, rec.buckets), sign)
        if rec.is_sidechain:
            s.subagent_requests += sign
        if sign > 0:
            s.models.add(rec.model)
            s.see(rec.timestamp)
            if rec.purpose == "main" and (s.last is None or rec.timestamp is None or rec.timestamp >= s.last):
                s.last_context_tokens = rec.context_tokens

    def _group(self, index: int) -> dict[str, Tally]:
        out: dict[str, Tally] = {}
        for s in self.sessions.values():
            for cell, t in s.cells.items():
                if not t.requests:    # emptied by a sidechain copy being replaced
                    continue
                g = out.get(cell[index])
                if g is None:
                    g = out[cell[index]] = Tally()
                g.merge(t)
        return out

    @property
    def by_model(self) -> dict[str, Tally]:
        return self._group(0)

    @property
    def by_day(self) -> dict[str, Tally]:
        return self._group(1)

    @property
    def totals(self) -> Tally:
        return _sum(t for s in self.sessions.values() for t in s.cells.values())

    def unpriced_models(self) -> list[str]:
        return sorted(m for m, t in self.by_model.items() if t.unpriced)

    def compaction_count(self) -> int:
        return sum(len(s.compactions) for s in self.sessions.values())

    def session_list(self) -> list[SessionSummary]:
        return sorted(self.sessions.values(), key=lambda s: (s.last or 0.0, s.session_id))

    def to_json(self) -> dict[str, Any]:
        by_model, by_day = self.by_model, self.by_day
        return {
            "totals": {**self.totals.to_dict(), "sessions": len(self.sessions), "compactions": self.compaction_count()},
            "by_model": {m: t.to_dict() for m, t in sorted(by_model.items())},
            "by_day": {d: t.to_dict() for d, t in sorted(by_day.items())},
            "sessions": [s.to_dict() for s in self.session_list()],
            "unpriced_models": self.unpriced_models(),
            "files": self.files,
            "skipped_lines": self.skipped_lines,
        }
