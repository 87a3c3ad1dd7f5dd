"""The one cost model: tokens and dollars per model × bucket × purpose.

`Tally` is one row (a model, a purpose, or a report's model-day cell): tokens and dollars per
bucket, calls, and what cache reads saved. `CostTally` keeps a row per model and one per purpose
(main, compaction, memory, ...) and makes the `CostUpdate` every cost pane shows. The loop books
each model call into one, `ctxtui watch` books each logged call into one, and `ctxtui usage` sums
the same rows per model, day, purpose and session. Unknown prices stay unknown (None), never 0.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from agent_core.pricing.cost import (BUCKETS, INPUT_BUCKETS, MAX_REQUEST_TOKENS, price_buckets, price_period,
                                     usage_buckets)
from agent_core.pricing.pricer import Period, Priced, Pricer
from agent_core.slots import ValueSlots

TYPE_CHECKING = False    # typing and dataclasses stay unloaded: `ctxtui usage` runs again and again
if TYPE_CHECKING:
    from typing import Any

    from agent_core.events import CostUpdate

TOKEN_KEYS = {b: f"{b}_tokens" for b in BUCKETS}

# Bounds on a saved cost book (a session's state snapshot), so a damaged or hostile log cannot
# restore absurd totals: no row holds more calls than a session can make (ten million: four months
# of one call a second), more tokens per bucket than its calls can report (MAX_REQUEST_TOKENS
# each), or more dollars than its tokens can cost at $1,000 per million (over ten times the dearest
# list price of any model, output included).
MAX_SESSION_CALLS = 10_000_000
MAX_USD_PER_TOKEN = 1_000 / 1_000_000


def _count(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else 0


def _dollars(v: Any) -> float | None:
    """A dollar figure from a saved state (a number, or a Decimal string from older versions)."""
    if v is None or isinstance(v, bool):
        return None
    try:
        f = float(str(v))
    except ValueError:
        return None
    return f if math.isfinite(f) else None


def _money(x: float | None) -> float | None:
    """Dollars for a JSON report: None (null) when unknown or not finite, which JSON cannot say."""
    return None if x is None or not math.isfinite(x) else round(x, 6)


class Tally(ValueSlots):
    """Tokens, dollars (total and per bucket) and calls. `unpriced` counts calls with no known
    price, `unsplit` calls whose dollars could not be split by bucket, `unsaved` calls whose cache
    savings are unknown; each makes its figure None rather than a guess. (Written out, not a
    dataclass: importing dataclasses was a sixth of a repeated `ctxtui usage` run.)"""

    __slots__ = ("tokens", "usd", "cost", "saved", "requests", "unpriced", "unsplit", "unsaved")

    def __init__(self, tokens: dict[str, int] | None = None, usd: dict[str, float] | None = None, cost: float = 0.0,
                 saved: float = 0.0, requests: int = 0, unpriced: int = 0, unsplit: int = 0, unsaved: int = 0) -> None:
        self.tokens = dict.fromkeys(BUCKETS, 0) if tokens is None else tokens
        self.usd = dict.fromkeys(BUCKETS, 0.0) if usd is None else usd
        self.cost = cost
        self.saved = saved
        self.requests = requests
        self.unpriced = unpriced
        self.unsplit = unsplit
        self.unsaved = unsaved

    def add(self, buckets: Mapping[str, int], priced: Priced, sign: int = 1) -> None:
        """Book one call (sign -1 takes a call back out: a sub-agent copy replaced by the main one)."""
        for k in BUCKETS:
            self.tokens[k] += sign * buckets.get(k, 0)
        self.requests += sign
        if priced.total is None:
            self.unpriced += sign
        else:
            self.cost += sign * priced.total
        if priced.parts is None:
            self.unsplit += sign
        else:
            for k in BUCKETS:
                self.usd[k] += sign * priced.parts.get(k, 0.0)
        if priced.saved is None:
            self.unsaved += sign
        else:
            self.saved += sign * priced.saved

    def merge(self, other: "Tally") -> "Tally":
        for k in BUCKETS:
            self.tokens[k] += other.tokens[k]
            self.usd[k] += other.usd[k]
        self.cost += other.cost
        self.saved += other.saved
        self.requests += other.requests
        self.unpriced += other.unpriced
        self.unsplit += other.unsplit
        self.unsaved += other.unsaved
        return self

    @property
    def cost_usd(self) -> float | None:
        return None if self.unpriced else self.cost

    @property
    def saved_usd(self) -> float | None:
        return None if self.unsaved else self.saved

    @property
    def usd_by_bucket(self) -> dict[str, float] | None:
        return None if self.unpriced or self.unsplit else dict(self.usd)

    def view(self) -> dict[str, Any]:
        """The cost pane's row: bucket tokens, `cost_usd` (None = unknown), `requests` and, when
        known, `usd_by_bucket`."""
        out: dict[str, Any] = {**self.tokens, "cost_usd": self.cost_usd, "requests": self.requests}
        split = self.usd_by_bucket
        if split is not None:
            out["usd_by_bucket"] = split
        return out

    def report_dict(self) -> dict[str, Any]:
        """The row as `ctxtui usage --json` writes it."""
        d: dict[str, Any] = {TOKEN_KEYS[k]: self.tokens[k] for k in BUCKETS}
        d["total_tokens"] = sum(self.tokens.values())
        d["requests"] = self.requests
        d["cost_usd"] = _money(self.cost_usd)
        if self.unpriced:
            d["priced_cost_usd"] = _money(self.cost)
        return d

    def state_dict(self) -> dict[str, Any]:
        """The row as a session's state snapshot keeps it (read back by `from_state`)."""
        split = self.usd_by_bucket
        return {"tokens": dict(self.tokens), "calls": self.requests, "cost_usd": self.cost_usd,
                "saved_usd": self.saved_usd, "usd_by_bucket": split}

    @classmethod
    def from_state(cls, d: Mapping[str, Any]) -> "Tally":
        """A row from `state_dict`, or from an older version's (Decimal strings, no split)."""
        t = cls()
        toks = d.get("tokens")
        toks = toks if isinstance(toks, Mapping) else {}
        for k in BUCKETS:
            t.tokens[k] = _count(toks.get(k))
        t.requests = _count(d.get("calls"))
        unknown = max(t.requests, 1)
        cost, saved = _dollars(d.get("cost_usd")), _dollars(d.get("saved_usd"))
        t.cost, t.unpriced = (0.0, unknown) if cost is None else (cost, 0)
        t.saved, t.unsaved = (0.0, unknown) if saved is None else (saved, 0)
        split = d.get("usd_by_bucket")
        parts = {k: _dollars(split.get(k)) for k in BUCKETS} if isinstance(split, Mapping) else {}
        usd = {k: v for k, v in parts.items() if v is not None}
        if parts and len(usd) == len(parts):
            t.usd = usd
        elif t.requests:
            t.unsplit = t.requests
        return t


def _row_problem(row: Mapping[str, Any]) -> str | None:
    calls = _count(row.get("calls"))
    if calls > MAX_SESSION_CALLS:
        return f"{calls:,} calls (at most {MAX_SESSION_CALLS:,})"
    toks = row.get("tokens")
    toks = toks if isinstance(toks, Mapping) else {}
    total = 0
    for k in BUCKETS:
        n = _count(toks.get(k))
        if n > max(calls, 1) * MAX_REQUEST_TOKENS:
            return (f"{k} tokens above what {calls:,} call{'s' if calls != 1 else ''} can report "
                    f"({max(calls, 1) * MAX_REQUEST_TOKENS:,})")
        total += n
    most = total * MAX_USD_PER_TOKEN + 0.01
    split = row.get("usd_by_bucket")
    split = split if isinstance(split, Mapping) else {}
    for name, v in (("cost_usd", row.get("cost_usd")), ("saved_usd", row.get("saved_usd")),
                    *((f"usd_by_bucket.{k}", split.get(k)) for k in BUCKETS)):
        usd = _dollars(v)
        if usd is not None and abs(usd) > most:
            return f"{name} ${usd:,.2f} for {total:,} tokens (at most ${most:,.2f})"
    return None


def cost_state_problem(d: Any) -> str | None:
    """What makes a saved cost book (`CostTally.to_dict`) impossible, or None: a row with more
    calls, tokens or dollars than a session can reach (MAX_SESSION_CALLS, MAX_REQUEST_TOKENS per
    call and bucket, MAX_USD_PER_TOKEN). Rows that are not objects are skipped by `from_dict`."""
    if not isinstance(d, Mapping):
        return "not an object"
    for key in ("models", "purposes"):
        rows = d.get(key)
        if rows is None:
            continue
        if not isinstance(rows, Mapping):
            return f"{key!r} is not an object"
        for name, row in rows.items():
            if isinstance(row, Mapping) and (problem := _row_problem(row)) is not None:
                return f"{key} {str(name)[:40]!r}: {problem}"
    return None


def burn_rate(total_usd: float | None, start: float | None, end: float | None) -> float | None:
    """Dollars per hour over [start, end] (seconds); None when unknown or under a minute, where a
    rate says nothing."""
    if total_usd is None or start is None or end is None:
        return None
    hours = (end - start) / 3600
    return total_usd / hours if hours > 1 / 60 else None


def loop_pricer(price_as: Mapping[str, str] | None = None, known: Mapping[str, Sequence[Period]] | None = None
                ) -> Pricer:
    """The loop's prices: genai-prices', with `price_as` borrowing another model's (the demo);
    `known`: periods learned by earlier runs (agent_core/pricing/rates_cache.py)."""
    borrow = dict(price_as or {})
    return Pricer(lambda model, buckets, when: price_buckets(borrow.get(model, model), buckets, when), known=known,
                  period=lambda model, when: price_period(borrow.get(model, model), when))


class CostTally:
    """Running cost of a session, by model and by purpose. `price_as` maps a model with no price
    of its own (e.g. "demo") to one whose prices it borrows; `pricer` replaces the pricing."""

    def __init__(self, price_as: Mapping[str, str] | None = None, pricer: Pricer | None = None) -> None:
        self.price_as = dict(price_as or {})
        self.price = pricer or loop_pricer(self.price_as)
        self.models: dict[str, Tally] = {}
        self.purposes: dict[str, Tally] = {}

    def add(self, model: str, usage: Any, purpose: str = "main", when: float | None = None) -> None:
        """Book one model call from its API usage (a dict or an SDK object), priced at its time
        `when` (epoch seconds; None: now). Never raises."""
        try:
            self.add_buckets(str(model or "unknown"), usage_buckets(usage), str(purpose or "main"), when=when)
        except Exception:  # pragma: no cover - bookkeeping must never break a turn
            pass

    def add_buckets(self, model: str, buckets: Mapping[str, int], purpose: str = "main", sign: int = 1,
                    when: float | None = None) -> None:
        priced = self.price.priced(model, buckets, when)
        for table, key in ((self.models, model), (self.purposes, purpose)):
            row = table.get(key)
            if row is None:
                row = table[key] = Tally()
            row.add(buckets, priced, sign)

    def _rows(self, table: dict[str, Tally]) -> dict[str, Tally]:
        """Rows with something to show (not one emptied by a replaced sub-agent copy)."""
        return {k: t for k, t in table.items() if t.requests or t.unpriced}

    def _sum(self) -> Tally:
        out = Tally()
        for t in self._rows(self.models).values():
            out.merge(t)
        return out

    @property
    def total_usd(self) -> float | None:
        return self._sum().cost_usd

    def by_model(self) -> dict[str, dict[str, Any]]:
        return {m: t.view() for m, t in self._rows(self.models).items()}

    def by_purpose(self) -> dict[str, dict[str, Any]]:
        return {p: t.view() for p, t in self._rows(self.purposes).items()}

    def tokens(self) -> dict[str, int]:
        """Tokens per bucket over every model."""
        return self._sum().tokens

    def calls(self) -> int:
        return self._sum().requests

    def cache_hit_rate(self) -> float:
        """Cache reads as a share of all input (uncached + writes + reads); 0.0 with no input."""
        tok = self.tokens()
        total = sum(tok[k] for k in INPUT_BUCKETS)
        return tok["cache_read"] / total if total else 0.0

    def saved_by_cache_usd(self) -> float | None:
        return self._sum().saved_usd

    def to_dict(self) -> dict[str, Any]:
        return {"version": 2,
                "models": {m: t.state_dict() for m, t in self.models.items()},
                "purposes": {p: t.state_dict() for p, t in self.purposes.items()}}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None, price_as: Mapping[str, str] | None = None,
                  pricer: Pricer | None = None) -> "CostTally":
        tally = cls(price_as=price_as, pricer=pricer)
        d = d if isinstance(d, Mapping) else {}
        for table, key in ((tally.models, "models"), (tally.purposes, "purposes")):
            src = d.get(key)
            if isinstance(src, Mapping):
                table.update({str(k): Tally.from_state(v) for k, v in src.items() if isinstance(v, Mapping)})
        return tally

    def event(self) -> CostUpdate:
        # Imported here: agent_core.events loads asyncio, which `ctxtui usage` never needs (start-up time).
        from agent_core.events import CostUpdate  # noqa: PLC0415  (start-up time)
        return CostUpdate(total_usd=self.total_usd, by_model=self.by_model(), by_purpose=self.by_purpose(),
                          cache_hit_rate=round(self.cache_hit_rate(), 4), saved_usd=self.saved_by_cache_usd())
