"""What the next request will cost before it is sent: its tokens split into what the prompt cache
still holds and what it must write, its dollars while the cache is warm and once it has gone cold,
and how long the cache has left.

The cache holds the prefix of the last request (its usage: input, cache writes and cache reads)
until the TTL it was written under has passed since it answered; a layer that rewrote the history
inside that prefix since then (`cache_economics.note_rewrite`) leaves only the part before the
change readable. ctxtui marks the latest message with a breakpoint, so everything past the cached
prefix is written to the cache (1.25x input for 5m, 2x for 1h) and read at 0.1x: warm dollars are
cached x read + uncached x write, cold dollars are every token x write. Output is not priced: its
length is not known before the answer.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from compaction.accounting.cache_model import MIN_CACHEABLE, Rates, ttl_seconds, write_bucket
from compaction.cache_economics import NAME, warm_prefix
from compaction.entry import Entry
from compaction.layer_context import PipelineState
from compaction.layerkit import runtime

KEYS = ("tokens", "cached_tokens", "uncached_tokens", "usd_if_warm", "usd_if_cold", "cache_expires_in_s")


@dataclass(frozen=True)
class NextRequest:
    tokens: int                       # what the next request holds, as the context figure counts it
    cached_tokens: int                # of those, what it reads from the cache while the cache is warm
    uncached_tokens: int              # what it writes
    usd_if_warm: float | None         # None: the model's prices are not known
    usd_if_cold: float | None
    cache_expires_in_s: float | None  # None: nothing cached yet (no response in this history)

    def typed(self, extra: int) -> NextRequest:
        """The same request with `extra` more tokens (the prompt being typed): all of them written."""
        if extra <= 0:
            return self
        warm, cold = self.usd_if_warm, self.usd_if_cold
        if cold is not None and self.tokens > 0:
            per = cold / self.tokens            # every token of a cold request is written: the write rate
            cold = round(cold + extra * per, 9)
            warm = None if warm is None else round(warm + extra * per, 9)
        else:
            warm = cold = None
        return NextRequest(self.tokens + extra, self.cached_tokens, self.uncached_tokens + extra, warm, cold,
                           self.cache_expires_in_s)

    def later(self, seconds: float) -> NextRequest:
        """The same request `seconds` later: the cache's time left counted down (never below 0)."""
        if self.cache_expires_in_s is None or seconds <= 0:
            return self
        return NextRequest(self.tokens, self.cached_tokens, self.uncached_tokens, self.usd_if_warm,
                           self.usd_if_cold, max(0.0, self.cache_expires_in_s - seconds))

    @property
    def warm(self) -> bool:
        return bool(self.cache_expires_in_s) and self.cached_tokens > 0

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in KEYS}


def next_request(entries: Sequence[Entry], state: PipelineState, *, tokens: int, now: float, ttl: str,
                 rates: Rates | None, head_tokens: int = 0, last_call_at: float | None = None) -> NextRequest:
    """The next request over the projected view `entries` whose count is `tokens` (see the module
    docstring). `head_tokens`: the system prompt and tools, still cached after a summary took the
    anchor's prefix away; `last_call_at`: when the last call answered (the cache's age when this
    history has no response of its own yet). `rates` None: dollars unknown."""
    ai, held, answered = warm_prefix(entries)
    if ai is None:
        held, when = 0, last_call_at
    else:
        st = runtime(state, NAME)
        if st.get("broken_anchor") == entries[ai].uuid:
            held = min(held, int(st.get("broken_at", held)))
        when = answered
    if when is None:
        cached, left = 0, None
    else:
        left = round(max(0.0, when + ttl_seconds(ttl) - now), 1)
        if held < MIN_CACHEABLE:
            held = head_tokens if head_tokens >= MIN_CACHEABLE else 0
        cached = min(held, tokens)
    uncached = max(0, tokens - cached)
    if rates is None:
        warm = cold = None
    else:
        w = rates.get(write_bucket(ttl))
        warm = round(cached * rates.cache_read + uncached * w, 9)
        cold = round(tokens * w, 9)
    return NextRequest(tokens, cached, uncached, warm, cold, left)
