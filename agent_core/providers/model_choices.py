"""The models `/model` offers: each known model's window and prices per million tokens, from the
shipped rates table and the loop's pricer (no price is written by hand here), and what switching
to one costs: a model has its own prompt cache, so the next request writes the whole current
context to the new model's cache, at its cache-write price."""
from __future__ import annotations

import re
from dataclasses import dataclass

from compaction.accounting.cache_model import write_bucket

from agent_core.pricing import rates_table
from agent_core.pricing.cost import DEMO_PRICED_AS
from agent_core.pricing.pricer import Pricer
from agent_core.providers.models_info import DEMO_CONTEXT_WINDOW, DEMO_MODEL, model_limits

PER_MILLION = 1_000_000
_DATED = re.compile(r"^(.*)-\d{8}$")
_FAMILIES = ("opus", "sonnet", "haiku")


@dataclass(frozen=True)
class ModelChoice:
    model: str
    window: int
    window_note: str                        # "1M opt-in": 200k unless the 1M context is on; else ""
    per_million: dict[str, float] | None    # input, output, cache_write (at the TTL), cache_read; None: unknown
    priced_as: str | None = None            # the demo borrows a real model's prices

    def switch_cost(self, tokens: int) -> float | None:
        """Dollars of writing `tokens` (the whole current context) to this model's cache."""
        if self.per_million is None:
            return None
        return tokens * self.per_million["cache_write"] / PER_MILLION


def known_models(ids: tuple[str, ...] = rates_table.MODELS) -> list[str]:
    """The rates table's ids, newest first, without a dated id whose alias is listed too
    (claude-opus-4-5-20251101 is claude-opus-4-5)."""
    listed = set(ids)
    out = []
    for m in ids:
        dated = _DATED.match(m)
        if dated and any(a in listed for a in (dated[1], dated[1] + "-0", dated[1] + "-latest")):
            continue
        out.append(m)
    return sorted(dict.fromkeys(out), key=_order)


def _order(model: str) -> tuple:
    """Newest version first, then opus, sonnet, haiku."""
    parts = model.split("-")
    nums = [int(p) for p in parts if p.isdigit() and len(p) < 8]
    family = next((i for i, f in enumerate(_FAMILIES) if f in parts), len(_FAMILIES))
    return (-(nums[0] if nums else 0), -(nums[1] if len(nums) > 1 else 0), family, model)


def choices(*, ttl: str = "5m", long_context: bool = False, current: str | None = None,
            pricer: Pricer | None = None) -> list[ModelChoice]:
    """The demo, then every known model (and `current` first among them when it is not one)."""
    pricer = pricer or Pricer(known=rates_table.load()[0])
    models = known_models()
    if current and current != DEMO_MODEL and current not in models:
        models.insert(0, current)
    demo = ModelChoice(DEMO_MODEL, DEMO_CONTEXT_WINDOW, "", _per_million(pricer, DEMO_PRICED_AS, ttl),
                       priced_as=DEMO_PRICED_AS)
    out = [demo]
    for m in models:
        limits = model_limits(m, long_context=long_context)
        note = "1M opt-in" if limits.window_source == "1M opt-in" else ""
        out.append(ModelChoice(m, limits.context_window, note, _per_million(pricer, m, ttl)))
    return out


def _per_million(pricer: Pricer, model: str, ttl: str) -> dict[str, float] | None:
    rates = pricer.rates(model)
    if rates is None:
        return None
    return {"input": rates["input"] * PER_MILLION, "output": rates["output"] * PER_MILLION,
            "cache_write": rates[write_bucket(ttl)] * PER_MILLION, "cache_read": rates["cache_read"] * PER_MILLION}
