"""One priced model call: its dollars, those dollars split over the token buckets, and what its
cache reads saved — the figures every cost view (the loop, watch, usage) shows.

Each call is priced on its own through `price_buckets` (tiered prices depend on one request's
input). That call costs ~0.1 ms, too slow for a log with 100,000 responses, so `Pricer` learns
each model's per-token rates from it once and proves where they hold: genai-prices prices are
linear in each bucket until the request's total input crosses the model's first tier. Below that
limit a call is priced with the learned rates (the same number); above it, or when the rates
cannot be learned, `price_buckets` is called directly. The learned base rates also split a call's
dollars over its buckets, scaled so the parts always add up to the call's price.

A request is priced for its date: a model's prices change over time (Opus 4.6 lost its
long-context premium on 2026-03-13), so rates are learned per price period, the span of time one
of genai-prices' prices for the model holds (`cost.price_period`), and a call is matched to its
period by its timestamp (none: now).
"""
from __future__ import annotations

import time
from collections import namedtuple
from collections.abc import Callable, Mapping, Sequence   # not typing's: it would cost every status line call 3 ms

from agent_core.pricing.cost import BUCKETS, price_period, shown_price

_PROBE_MAX = 1 << 22          # ~4M tokens of input: beyond any context window
_REL_TOL = 1e-9

PriceFn = Callable[[str, dict[str, int], "float | None"], "float | None"]    # (model, buckets, epoch s)
Learned = tuple[float, dict[str, float], int]     # (per-request constant, rate per bucket, input limit)
# One price period of a model: [start, end) in epoch seconds (None: open) and its learned rates
# (None: the model has no price, or prices that are not linear even for small requests).
Period = tuple["float | None", "float | None", "Learned | None"]


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= _REL_TOL * max(1.0, abs(a), abs(b))


class Priced(namedtuple("Priced", "total parts saved")):
    """One call's dollars; None where unknown (a model without price data). A named tuple, not a
    dataclass: the status line loads this on every refresh (dataclasses costs 10 ms to import)."""
    __slots__ = ()
    total: float | None
    parts: dict[str, float] | None     # dollars per bucket, adding up to `total`
    saved: float | None                # what the cache reads would have cost as input, minus their cost


class Pricer:
    """`price(model, buckets) -> float | None`, equal to `price_buckets` but fast for big logs;
    `priced(model, buckets)` adds the per-bucket split and the cache savings; `rates(model)` the
    learned per-token rates."""

    def __init__(self, price: PriceFn = shown_price, known: Mapping[str, Sequence[Period]] | None = None,
                 period: Callable[[str, float], tuple[float | None, float | None]] = price_period) -> None:
        """`known`: periods learned by an earlier run (`learned()`), so this one need not load the
        price data for those models and dates (`ctxtui usage` keeps them between runs). `period`:
        the price period of (model, epoch seconds), from the same data `price` reads."""
        self._price = price
        self._period = period
        self._models: dict[str, list[Period]] = {m: list(v) for m, v in (known or {}).items()}
        self.exact_calls = 0

    def periods(self, model: str) -> int:
        """How many price periods of `model` are known (a caller keeping them saves on a change)."""
        return len(self._models.get(model) or ())

    def learned(self) -> dict[str, list[Period]]:
        """Every price period learned so far, per model (to pass as `known` later)."""
        return {m: list(v) for m, v in self._models.items() if v}

    def rates(self, model: str, when: float | None = None) -> dict[str, float] | None:
        """Dollars per token for each bucket of `model` at `when` (now by default; its base tier:
        what a request below the first price tier pays), or None for a model without price data.
        The engine's cache model and replay price requests with these."""
        learned = self._learned(model, time.time() if when is None else when)
        return None if learned is None else dict(learned[1])

    def _learned(self, model: str, when: float) -> Learned | None:
        periods = self._models.get(model)
        if periods is None:
            periods = self._models[model] = []
        for start, end, learned in periods:
            if (start is None or start <= when) and (end is None or when < end):
                return learned
        start, end = self._period(model, when)
        learned = self._learn(model, when)
        periods.append((start, end, learned))
        return learned

    def __call__(self, model: str, buckets: Mapping[str, int], when: float | None = None) -> float | None:
        when = time.time() if when is None else when
        learned = self._learned(model, when)
        if learned is None:
            return self._exact(model, buckets, when)
        const, r, limit = learned
        i, w5, w1, cr = (buckets.get("input", 0), buckets.get("cache_write_5m", 0), buckets.get("cache_write_1h", 0),
                         buckets.get("cache_read", 0))
        if i + w5 + w1 + cr > limit:
            return self._exact(model, buckets, when)
        return (const + r["input"] * i + r["cache_write_5m"] * w5 + r["cache_write_1h"] * w1 + r["cache_read"] * cr
                + r["output"] * buckets.get("output", 0))

    def priced(self, model: str, buckets: Mapping[str, int], when: float | None = None) -> Priced:
        when = time.time() if when is None else when
        total = self(model, buckets, when)
        reads = buckets.get("cache_read", 0)
        if total is None:
            return Priced(None, None, None if reads else 0.0)
        saved: float | None = 0.0
        if reads:
            uncached = self(model, {**buckets, "cache_read": 0, "input": buckets.get("input", 0) + reads}, when)
            saved = None if uncached is None else uncached - total
        return Priced(total, self._split(model, buckets, total, when), saved)

    def _split(self, model: str, buckets: Mapping[str, int], total: float, when: float) -> dict[str, float] | None:
        learned = self._learned(model, when)
        if learned is None:
            return None
        const, rates, _ = learned
        base = {k: rates[k] * buckets.get(k, 0) for k in BUCKETS}
        s = sum(base.values())
        scale = (total - const) / s if s > 0 else 0.0
        return {k: v * scale for k, v in base.items()}

    def _exact(self, model: str, buckets: Mapping[str, int], when: float) -> float | None:
        self.exact_calls += 1
        return self._price(model, dict(buckets), when)

    def _learn(self, model: str, when: float) -> Learned | None:
        """(per-request constant, per-token rate per bucket, largest total input where they hold)
        at `when`, or None when the model is unknown or its prices are not linear even for small
        requests."""
        const = self._price(model, dict.fromkeys(BUCKETS, 0), when)
        if const is None:
            return None
        rates: dict[str, float] = {}
        for k in BUCKETS:
            p = self._price(model, {**dict.fromkeys(BUCKETS, 0), k: 1000}, when)
            if p is None:
                return None
            rates[k] = (p - const) / 1000

        def linear(total_input: int) -> bool:
            b = _probe(total_input)
            p = self._price(model, b, when)
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
