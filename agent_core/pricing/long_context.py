"""Long-context premiums that Anthropic's pricing page lists and genai-prices' data leaves out.

Claude Sonnet 4 (claude-sonnet-4-20250514, genai-prices' `claude-sonnet-4-0`) with the 1M-token
context window bills a request whose input exceeds 200K tokens at premium rates: input, cache
writes and cache reads at 2×, output at 1.5× (https://docs.anthropic.com/en/docs/about-claude/pricing,
"Long context pricing"). genai-prices carries that tier for Sonnet 4.5 but prices Sonnet 4 flat,
so a 302K-token request came out at half its price. A model named here gets the tier only while
its data has none: when genai-prices adds it, its own tier is used.
"""
from __future__ import annotations

TYPE_CHECKING = False    # typing stays unloaded at run time: 3 ms of every status line call
if TYPE_CHECKING:
    from typing import Any

LONG_CONTEXT_START = 200_000
# genai-prices model id -> multiplier per price field, above LONG_CONTEXT_START input tokens
PREMIUMS: dict[str, dict[str, int | float]] = {
    "claude-sonnet-4-0": {"input_mtok": 2, "cache_write_mtok": 2, "cache_write_1h_mtok": 2, "cache_read_mtok": 2,
                          "output_mtok": 1.5},
}


def with_long_context_premium(model_id: str, mp: Any) -> Any:
    """`mp` (a genai-prices ModelPrice) with the premium tier added to each flat price field of a
    model in PREMIUMS; `mp` itself for any other model or when its data is already tiered."""
    factors = PREMIUMS.get(model_id)
    if not factors:
        return mp
    from decimal import Decimal  # noqa: PLC0415  (start-up time: only with genai-prices' data loaded)

    from genai_prices.types import ModelPrice, Tier, TieredPrices  # noqa: PLC0415  (start-up time)

    values = {k: v for k, v in vars(mp).items() if not k.startswith("_")}
    for field, factor in factors.items():
        price = values.get(field)
        if isinstance(price, TieredPrices):
            return mp
        if price is not None:
            values[field] = TieredPrices(base=price, tiers=[Tier(start=LONG_CONTEXT_START,
                                                                 price=price * Decimal(str(factor)))])
    return ModelPrice(**values)
