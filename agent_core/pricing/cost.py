"""Token buckets and the price of one model call (the tally of many is agent_core.pricing.tally).

Prices come from genai-prices' bundled offline snapshot only (its update functions are never
called). Each call is priced on its own, because tiered prices depend on one request's input size:
summing buckets first and pricing the sum would cross tiers that no request crossed.

genai-prices wants `input_tokens` as the *total* input (uncached + cache read + cache write);
it then subtracts the more specific units it has prices for (cache read, cache write, 1-hour
cache write). A model whose data lacks a 1-hour write price would otherwise bill those tokens at
the 5-minute rate, so for it the 1-hour price is derived as 2 × its input price (Anthropic's rule).
An unknown model keeps its token counts and reports its cost as None; nothing here raises.

A request is priced at the prices of its date (genai-prices' request timestamp), since a model's
prices change: `price_period` says over which span of time one price holds. Where Anthropic's
pricing page lists a long-context premium that genai-prices' data leaves out (Sonnet 4 above
200K input tokens: agent_core.pricing.long_context), the premium is added as a price tier.
"""
from __future__ import annotations

import math
import warnings
from datetime import datetime, timezone
from collections.abc import Mapping   # not typing's: it would cost every status line call 3 ms
from functools import lru_cache

from agent_core.pricing.long_context import with_long_context_premium

TYPE_CHECKING = False    # typing stays unloaded at run time: 3 ms of every status line call
if TYPE_CHECKING:
    from decimal import Decimal
    from typing import Any

BUCKETS = ("input", "output", "cache_write_5m", "cache_write_1h", "cache_read")
FREE_MODELS = frozenset({"<synthetic>"})  # entries the loop makes itself: no API call, no cost
INPUT_BUCKETS = ("input", "cache_write_5m", "cache_write_1h", "cache_read")

# The most tokens one model call can report in any one bucket. A request's input (uncached, cache
# writes and cache reads together) fits in its context window, the largest of any Claude model
# being 1,000,000 tokens, and its output is at most the model's max output (128,000 today); ten
# times the largest window leaves room for bigger ones, and a figure above it cannot come from a
# real call: it is a damaged or hostile log line, which every reader skips instead of summing it
# (one 10^30-token line would otherwise price a session at trillions of dollars, or make resume
# think the context overflowing).
MAX_REQUEST_TOKENS = 10_000_000
USAGE_COUNTS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
SPLIT_COUNTS = ("ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens")


def usage_problem(usage: Any) -> str | None:
    """What makes a logged Messages-API usage dict impossible, or None when it is plausible: each
    token count present must be a whole number from 0 to MAX_REQUEST_TOKENS (the cache-write
    split too); other keys are not looked at."""
    if not isinstance(usage, Mapping):
        return f"usage is not an object ({type(usage).__name__})"
    split = usage.get("cache_creation")
    if split is not None and not isinstance(split, Mapping):
        return "usage.cache_creation is not an object"
    for where, keys in ((usage, USAGE_COUNTS), (split or {}, SPLIT_COUNTS)):
        for k in keys:
            v = where.get(k)
            if v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, int):
                return f"{k} is not a whole number ({str(v)[:40]!r})"
            if not 0 <= v <= MAX_REQUEST_TOKENS:
                shown = f"{v:,}" if abs(v) < 10 ** 15 else f"about 10^{len(str(abs(v))) - 1}"
                return f"{k} is {shown}, outside 0..{MAX_REQUEST_TOKENS:,} (no single call reports more)"
    return None


def _int(value: Any) -> int:
    """A token count from whatever an API (or a damaged log) handed us; bad values count as 0."""
    if isinstance(value, bool) or value is None:
        return 0
    if isinstance(value, int):
        return max(value, 0)
    try:
        f = float(value)
    except (TypeError, ValueError):
        return 0
    return int(f) if math.isfinite(f) and f > 0 else 0


def _as_mapping(usage: Any) -> Mapping:
    if isinstance(usage, Mapping):
        return usage
    dump = getattr(usage, "model_dump", None)  # an SDK Usage object
    if callable(dump):
        try:
            return dump()
        except Exception:
            return {}
    return {}


def usage_buckets(usage: dict) -> dict[str, int]:
    """The five buckets from a Messages-API usage dict.

    `input_tokens` is uncached input only. `cache_creation_input_tokens` is every cache write;
    `cache_creation.{ephemeral_5m,ephemeral_1h}_input_tokens` splits it by TTL. Without the split
    all writes are 5-minute ones (the API's default TTL)."""
    u = _as_mapping(usage)
    writes = _int(u.get("cache_creation_input_tokens"))
    split = _as_mapping(u.get("cache_creation"))
    w1h = _int(split.get("ephemeral_1h_input_tokens")) if split else 0
    w5m = _int(split.get("ephemeral_5m_input_tokens")) if split else 0
    if split:
        # Trust the split; a total larger than it (older servers, partial data) is 5-minute writes.
        w5m += max(writes - w1h - w5m, 0)
    else:
        w5m = writes
    return {
        "input": _int(u.get("input_tokens")),
        "output": _int(u.get("output_tokens")),
        "cache_write_5m": w5m,
        "cache_write_1h": w1h,
        "cache_read": _int(u.get("cache_read_input_tokens")),
    }


# genai-prices (and its pydantic models) takes a few hundred ms to import: it is loaded on the
# first price asked for, not when a front-end starts.
def _snapshot():
    from genai_prices import data_snapshot  # noqa: PLC0415  (start-up time)

    return data_snapshot.get_snapshot()


@lru_cache(maxsize=256)
def lookup_model(model: str):
    """genai-prices' (provider, ModelInfo) for a model id, or None. Anthropic is tried first
    (our client talks to it); then any provider that knows the id (e.g. a Bedrock-style id)."""
    if not model or model in FREE_MODELS:
        return None
    if model.lower().endswith("[1m]"):     # Claude Code's id for a session on the 1M context
        model = model[:-4]
    snap = _snapshot()
    try:
        return snap.find_provider_model(model, None, "anthropic", None)
    except Exception:
        pass
    for provider in snap.providers:
        try:
            found = provider.find_model(model)
        except Exception:
            continue
        if found is not None:
            return provider, found
    return None


def context_window(model: str) -> int | None:
    """The model's context window from genai-prices' data, if it has one."""
    found = lookup_model(model)
    cw = getattr(found[1], "context_window", None) if found else None
    return cw if isinstance(cw, int) and cw > 0 else None


def _doubled(price: Any) -> Any:
    from genai_prices.types import Tier, TieredPrices  # noqa: PLC0415  (start-up time)

    if isinstance(price, TieredPrices):
        return TieredPrices(base=price.base * 2, tiers=[Tier(start=t.start, price=t.price * 2) for t in price.tiers])
    return price * 2


def _model_price(model_info: Any, when: datetime):
    """The model's prices at `when`, with a 1-hour cache-write price derived when the data has none
    and the documented long-context premium added when the data leaves it out."""
    from genai_prices.types import ModelPrice  # noqa: PLC0415  (start-up time)

    mp = model_info.get_prices(when)
    if (getattr(mp, "cache_write_1h_mtok", None) is None and getattr(mp, "cache_write_mtok", None) is not None
            and getattr(mp, "input_mtok", None) is not None):
        values = {k: v for k, v in vars(mp).items() if not k.startswith("_")}
        values["cache_write_1h_mtok"] = _doubled(mp.input_mtok)
        mp = ModelPrice(**values)
    return with_long_context_premium(model_info.id, mp)


_SLOT_S = 900     # a time-of-day price (off-peak hours) holds for one quarter hour at a time


def price_period(model: str, when: float) -> tuple[float | None, float | None]:
    """[start, end) in epoch seconds (None: open) of the span around `when` over which `model`'s
    genai-prices price stays the one `_model_price` picks at `when`. Never raises."""
    try:
        found = lookup_model(model)
        prices = getattr(found[1], "prices", None) if found else None
        if not isinstance(prices, list) or len(prices) < 2:
            return None, None
        from genai_prices.types import StartDateConstraint  # noqa: PLC0415  (start-up time)

        if any(c.constraint is not None and not isinstance(c.constraint, StartDateConstraint) for c in prices):
            slot = math.floor(when / _SLOT_S) * _SLOT_S
            return float(slot), float(slot + _SLOT_S)
        at = datetime.fromtimestamp(when, tz=timezone.utc)

        def start(c: Any) -> float | None:
            d = c.constraint.start_date if c.constraint is not None else None
            return None if d is None else datetime(d.year, d.month, d.day, tzinfo=timezone.utc).timestamp()

        active = max((i for i, c in enumerate(prices) if c.constraint is None or c.constraint.active(at)),
                     default=0)    # the last active one wins, as in genai-prices' get_prices
        later = [t for c in prices[active + 1:] if (t := start(c)) is not None and t > when]
        return start(prices[active]), (min(later) if later else None)
    except Exception:
        return None, None


def _price_decimal(model: str, buckets: Mapping[str, int], when: datetime | None = None) -> Decimal | None:
    # decimal (2 ms) only where genai-prices' data is used: the shipped table prices without it
    from decimal import Decimal  # noqa: PLC0415  (start-up time)

    if model in FREE_MODELS:
        return Decimal(0)
    found = lookup_model(model)
    if found is None:
        return None
    from genai_prices import Usage  # noqa: PLC0415  (start-up time)

    b = {k: _int(buckets.get(k)) for k in BUCKETS}
    writes = b["cache_write_5m"] + b["cache_write_1h"]
    usage = Usage(
        input_tokens=b["input"] + writes + b["cache_read"],  # genai-prices wants the total input
        output_tokens=b["output"],
        cache_write_tokens=writes,
        cache_write_1h_tokens=b["cache_write_1h"],
        cache_read_tokens=b["cache_read"],
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mp = _model_price(found[1], when or datetime.now(tz=timezone.utc))
        return Decimal(mp.calc_price(usage)["total_price"])


def price_buckets(model: str, buckets: dict[str, int], when: float | None = None) -> float | None:
    """Dollars for one request's buckets at its time `when` (epoch seconds; None: now); None when
    the model (or its price) is unknown. Never raises."""
    try:
        at = datetime.fromtimestamp(when, tz=timezone.utc) if when is not None else None
        d = _price_decimal(model, buckets, at)
    except Exception:
        return None
    return None if d is None else float(d)


# The offline demo model has no price of its own; everywhere ctxtui shows dollars (the TUI, headless,
# watch, usage) it borrows this model's, for illustration.
DEMO_PRICED_AS = "claude-sonnet-4-6"


def shown_price(model: str, buckets: dict[str, int], when: float | None = None) -> float | None:
    """`price_buckets` as ctxtui shows it: the demo model priced as DEMO_PRICED_AS."""
    return price_buckets(DEMO_PRICED_AS if model == "demo" else model, buckets, when)
