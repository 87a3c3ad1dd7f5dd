"""The cache doctor in `ctxtui watch`: the log layer yields each response's usage, not the prompt it
answered, so a request is judged by its figures — the model, the time since the previous request
and its TTL, a compaction in between — against what the previous main request left cached
(compaction.accounting.cache_doctor). `ctxtui replay` compares the messages too."""
from __future__ import annotations

from compaction.accounting.cache_doctor import CacheMiss, PromptShape, diagnose
from compaction.accounting.cache_model import ttl_of

from agent_core.logs import UsageRecord
from agent_core.providers.models_info import cache_model

INPUT = ("input", "cache_read", "cache_write_5m", "cache_write_1h")


class UsageDoctor:
    """The previous main request's figures, and whether a compaction came since."""

    def __init__(self) -> None:
        self.previous: PromptShape | None = None
        self.rewritten = False

    def check(self, request: int, rec: UsageRecord) -> CacheMiss | None:
        """The miss of main request `request` (numbered as watch counts turns), if it read short."""
        if rec.timestamp is None:
            return None
        b = rec.buckets
        ttl = ttl_of(b, self.previous.ttl if self.previous is not None else "5m")
        shape = PromptShape(cache_model(rec.model), rec.timestamp, ttl, (), (),
                            total=sum(int(b.get(k, 0)) for k in INPUT), compacted=self.rewritten)
        self.rewritten = False
        miss = diagnose(request, self.previous, shape, int(b.get("cache_read", 0)))
        self.previous = shape
        return miss
