"""The cache doctor on ctxtui's own requests: each request's shape is kept until its answer says
what it read from the cache, then compared with the request before it
(compaction.accounting.cache_doctor). The last request's model, time, TTL and size go into the
session state, so the first request after a resume is judged too (by model and TTL: its
content before the resume is not kept)."""
from __future__ import annotations

from collections import deque
from dataclasses import replace
from typing import Any, Sequence

from compaction.accounting.cache_doctor import CacheMiss, PromptShape, diagnose, digest, shape_of
from compaction.estimate import estimate_message

from agent_core.providers.models_info import cache_model

KEPT = 50        # the misses a session keeps for its summary; the rest are counted


def _int(v: object) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else 0


class CacheWatch:
    """The previous request's shape, the one on its way, and the misses found so far."""

    def __init__(self) -> None:
        self.previous: PromptShape | None = None
        self.pending: PromptShape | None = None
        self.rewritten = False            # a compaction since the last request was sent
        self.requests = 0                 # main requests answered
        self.misses: deque[CacheMiss] = deque(maxlen=KEPT)
        self.miss_count = 0
        # the last request's messages by identity, with their digest and size: the history hands the
        # same message objects to every request, so only the new ones are digested (flat per turn)
        self._known: dict[int, tuple[dict[str, Any], str, int]] = {}

    def sending(self, *, model: str, at: float, ttl: str, tools: Sequence[dict[str, Any]], system: Any,
                messages: Sequence[dict[str, Any]], head_tokens: tuple[int, int]) -> None:
        """A main request is about to go out (a retry replaces the one before)."""
        known: dict[int, tuple[dict[str, Any], str, int]] = {}
        for m in messages:
            hit = self._known.get(id(m))
            known[id(m)] = hit if hit is not None and hit[0] is m else (m, digest(m), estimate_message(m))
        self._known = known
        parts = [known[id(m)] for m in messages]
        self.pending = shape_of(model=cache_model(model), at=at, ttl=ttl, tools=tools, system=system,
                                messages=messages, sizes=[p[2] for p in parts], head_tokens=head_tokens,
                                compacted=self.rewritten, digests=[p[1] for p in parts])

    def answered(self, usage: dict[str, Any] | None) -> CacheMiss | None:
        """Its answer came with `usage`: the miss, if it read short of what the previous one left."""
        shape, self.pending = self.pending, None
        if shape is None or not usage:
            return None
        self.rewritten = False
        self.requests += 1
        read = _int(usage.get("cache_read_input_tokens"))
        total = read + _int(usage.get("input_tokens")) + _int(usage.get("cache_creation_input_tokens"))
        miss = diagnose(self.requests, self.previous, shape, read)
        self.previous = replace(shape, total=total)
        if miss is not None:
            self.misses.append(miss)
            self.miss_count += 1
        return miss

    def state(self) -> dict[str, Any] | None:
        """What a resume needs: the last request's model, time, TTL, size and number."""
        p = self.previous
        return None if p is None else {"model": p.model, "at": p.at, "ttl": p.ttl, "total": p.total,
                                       "requests": self.requests}

    def restore(self, saved: object) -> None:
        """The state a resumed session's log kept (ignored when it is not one)."""
        if not isinstance(saved, dict):
            return
        model, at, ttl, total = saved.get("model"), saved.get("at"), saved.get("ttl"), _int(saved.get("total"))
        if not (isinstance(model, str) and isinstance(at, (int, float)) and ttl in ("5m", "1h") and total):
            return
        self.previous = PromptShape(model, float(at), str(ttl), (), (), total=total)
        self.requests = _int(saved.get("requests"))
