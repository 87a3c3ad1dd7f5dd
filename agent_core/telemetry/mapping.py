"""The loop's events as telemetry records: plain data, no OpenTelemetry (docs/telemetry.md).

`Mapper.records(event)` returns what one event means for telemetry: a finished model call (its
usage in the five token buckets, its price), a compaction, the context figure, the dollars the
cost book added per model and bucket since the last cost event, a turn's start and end. The cost
records are differences of the agent's own `CostUpdate`s, so what is exported adds up to what
ctxtui shows (and headless reports) exactly.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from agent_core import events as ev
from agent_core.pricing.cost import BUCKETS, INPUT_BUCKETS, usage_buckets

PriceFn = Callable[[str, dict], "float | None"]


@dataclass(frozen=True)
class CallRecord:
    """One finished model call (`purpose`: main, compaction, memory)."""
    request_model: str
    response_model: str
    response_id: str
    purpose: str
    buckets: Mapping[str, int]        # input, output, cache_write_5m, cache_write_1h, cache_read
    duration_s: float
    cost_usd: float | None
    end_s: float                      # epoch seconds

    @property
    def input_tokens(self) -> int:
        """All input, cached or not (the GenAI conventions count cache reads and writes in it)."""
        return sum(self.buckets.get(b, 0) for b in INPUT_BUCKETS)

    @property
    def cache_creation_tokens(self) -> int:
        return self.buckets.get("cache_write_5m", 0) + self.buckets.get("cache_write_1h", 0)


@dataclass(frozen=True)
class CompactionRecord:
    layer: str
    trigger: str
    tokens_before: int
    tokens_after: int
    duration_s: float
    end_s: float
    rewrite_cost_usd: float | None    # what rewriting the cached prefix cost, when the engine said
    summary_cost_usd: float | None    # the summary call's price, when a model wrote one


@dataclass(frozen=True)
class ContextRecord:
    model: str
    tokens: int
    window: int
    threshold: int
    state: str


@dataclass(frozen=True)
class CostRecord:
    """Dollars the cost book added for one model and bucket since the previous cost event."""
    model: str
    bucket: str
    usd: float


@dataclass(frozen=True)
class TurnRecord:
    turn: int
    finished: bool                    # False: the turn started; True: it ended
    stop_reason: str = ""


Record = CallRecord | CompactionRecord | ContextRecord | CostRecord | TurnRecord


def _number(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


class Mapper:
    """`request_model`: the session's model (what each request asks for). `price`: dollars of one
    call's usage at the session's rates (Agent.price). `cost_before`: the cost event of the session
    so far (a resumed session's earlier runs are not exported again)."""

    def __init__(self, request_model: str, price: PriceFn, cost_before: ev.CostUpdate | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.request_model = request_model
        self.price = price
        self.clock = clock
        self._usd: dict[tuple[str, str], float] = {}
        if cost_before is not None:
            self._usd = self._split(cost_before)

    def records(self, e: ev.Event) -> list[Record]:
        if isinstance(e, ev.ModelCall):
            return [self._call(e)]
        if isinstance(e, ev.Compaction):
            return [self._compaction(e)]
        if isinstance(e, ev.ContextUpdate):
            return [ContextRecord(self.request_model, e.tokens, e.window, e.threshold, e.state)]
        if isinstance(e, ev.CostUpdate):
            return list(self._cost(e))
        if isinstance(e, ev.TurnStarted):
            return [TurnRecord(e.turn, False)]
        if isinstance(e, ev.TurnFinished):
            return [TurnRecord(e.turns, True, e.stop_reason)]
        return []

    def _call(self, e: ev.ModelCall) -> CallRecord:
        buckets = usage_buckets(e.usage or {})
        return CallRecord(request_model=self.request_model, response_model=str(e.model or self.request_model),
                          response_id=str(e.message_id or ""), purpose=str(e.purpose or "main"), buckets=buckets,
                          duration_s=max(0.0, _number(e.duration_s) or 0.0),
                          cost_usd=self._price(str(e.model or self.request_model), e.usage),
                          end_s=self.clock())

    def _price(self, model: str, usage: Any) -> float | None:
        try:
            return _number(self.price(model, usage if isinstance(usage, dict) else {}))
        except Exception:   # pricing must never cost a turn its telemetry, nor a turn
            return None

    def _compaction(self, e: ev.Compaction) -> CompactionRecord:
        cache = e.cache if isinstance(e.cache, dict) else {}
        summary = self._price(self.request_model, e.usage) if isinstance(e.usage, dict) and e.usage else None
        return CompactionRecord(layer=str(e.layer), trigger=str(e.trigger), tokens_before=int(e.tokens_before),
                                tokens_after=int(e.tokens_after), duration_s=max(0.0, _number(e.duration_s) or 0.0),
                                end_s=_number(e.timestamp) or self.clock(),
                                rewrite_cost_usd=_number(cache.get("cost_usd")), summary_cost_usd=summary)

    @staticmethod
    def _split(e: ev.CostUpdate) -> dict[tuple[str, str], float]:
        out: dict[tuple[str, str], float] = {}
        for model, row in (e.by_model or {}).items():
            split = row.get("usd_by_bucket") if isinstance(row, dict) else None
            if not isinstance(split, dict):
                continue
            for bucket in BUCKETS:
                usd = _number(split.get(bucket))
                if usd is not None:
                    out[(str(model), bucket)] = usd
        return out

    def _cost(self, e: ev.CostUpdate):
        now = self._split(e)
        for key, usd in now.items():
            added = usd - self._usd.get(key, 0.0)
            if added > 0:
                yield CostRecord(key[0], key[1], added)
        self._usd.update(now)
