"""One prompt cache per model, and why a logged request missed the cache.

The API keeps a model's cache entries for that model alone: a haiku request between two opus
requests reads nothing the opus requests wrote, and the next opus request reads opus' own entry
(if still warm). `ModelCaches` is replay's cache with that rule (simulate.py prices with it,
validate.py checks it against the log).

A request misses when the log shows it reading well short of the longest prefix the last few
requests left at their breakpoints, whatever their model or age (`RecentPrefixes`: what it would
have read if only its own content mattered). Each miss gets the first reason that fits:
- `model switch`: its model is not the previous request's;
- `TTL`: the gap since the previous request is longer than the TTL that request wrote under;
- `tool list changed`: it read less than the head (tool definitions, then the system prompt);
- `first message block changed`: it read exactly the head and nothing of the messages;
- `unknown`: it read part of the messages, less than expected.
The first two the simulator reproduces; the others the log does not record.
"""
from __future__ import annotations

from collections import deque
from typing import Sequence

from compaction.accounting.cache_model import LOOKBACK, PrefixCache, ttl_seconds

from agent_core.providers.models_info import cache_model

MODEL_SWITCH = "model switch"
TTL = "TTL"
TOOLS_CHANGED = "tool list changed"
FIRST_BLOCK_CHANGED = "first message block changed"
UNKNOWN = "unknown"
REASONS = (MODEL_SWITCH, TTL, TOOLS_CHANGED, FIRST_BLOCK_CHANGED, UNKNOWN)
RECENT = 4                   # requests whose prefixes `RecentPrefixes` remembers


class ModelCaches:
    """A `PrefixCache` per model (module doc)."""

    def __init__(self) -> None:
        self.caches: dict[str, PrefixCache] = {}

    def get(self, model: str) -> PrefixCache:
        key = cache_model(model)
        cache = self.caches.get(key)
        if cache is None:
            cache = self.caches[key] = PrefixCache()
        return cache

    def warm(self, model: str, digest: str, tokens: int, until: float) -> None:
        """An entry already warm when the session began (Claude Code's shared head), for `model`."""
        self.get(model).entries[digest] = (tokens, until)


class RecentPrefixes:
    """The prefixes (digest -> tokens) at the breakpoints of the last `RECENT` requests."""

    def __init__(self) -> None:
        self.requests: deque[dict[str, int]] = deque(maxlen=RECENT)

    def expected(self, digests: Sequence[str], bps: Sequence[int]) -> int:
        """Tokens of the longest remembered prefix this request holds (found like the API does: at
        a breakpoint or up to `LOOKBACK` blocks before one)."""
        best = 0
        for bp in bps:
            for j in range(bp, max(-1, bp - LOOKBACK - 1), -1):
                for seen in self.requests:
                    tokens = seen.get(digests[j])
                    if tokens is not None and tokens > best:
                        best = tokens
        return best

    def add(self, digests: Sequence[str], sizes: Sequence[int], bps: Sequence[int]) -> None:
        self.requests.append({digests[i]: sizes[i] for i in bps})


def miss_reason(*, model: str, previous_model: str | None, gap: float, previous_ttl: str, read: int,
                head: int) -> str:
    """The reason for a miss (module doc, in that order)."""
    if previous_model is not None and cache_model(model) != cache_model(previous_model):
        return MODEL_SWITCH
    if gap > ttl_seconds(previous_ttl):
        return TTL
    near = max(32, head // 50)
    if read < head - near:
        return TOOLS_CHANGED
    if abs(read - head) <= near:
        return FIRST_BLOCK_CHANGED
    return UNKNOWN
