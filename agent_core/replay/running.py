"""The context of one policy run, kept from one request to the next (simulate.py).

Pricing a request through `PrefixCache.request` hashes every block of it, and counting the
references it kept scans its messages: O(context) per request, so O(requests × context) for a
run — quadratic under `none`, whose context is the whole session. `RunningContext` keeps, for
the context last sent, the prefix digest and running size after each block, how many of its
messages hold each reference and how many carry each file's content (content.py); a new request
drops the messages after the part it kept and adds its new ones, so it costs O(what changed). The
cache decision itself is `PrefixCache.request`'s, reading the kept digests (a test holds the two
equal on random request sequences).
"""
from __future__ import annotations

import hashlib
from collections import Counter
from typing import Iterable, Sequence

from compaction.accounting.cache_model import Block, CacheUsage, PrefixCache, chain, ttl_seconds, write_bucket

from agent_core.logs.trajectory import Message
from agent_core.replay.content import ContentIndex
from agent_core.replay.references import ReferenceIndex


def _digest(previous: str, key: str) -> str:
    """`cache_model.chain`'s step."""
    return hashlib.blake2b(f"{previous}\x00{key}".encode(), digest_size=12).hexdigest()


class RunningContext:
    """See module docstring. `head` are the blocks before the messages (breakpoints set);
    `content`, when given, keeps `files`: the files whose content the context holds (content.py)."""

    def __init__(self, head: Sequence[Block], refs: ReferenceIndex, content: ContentIndex | None = None) -> None:
        self.refs = refs
        self.content = content
        self.head = list(head)
        self.messages: list[Message] = []
        self.digests: list[str] = chain(self.head)          # after each block: head, then messages
        self.sizes: list[int] = []                          # cache size after each block (max(0, tokens))
        size = 0
        for b in self.head:
            size += b.tokens
            self.sizes.append(size)
        self.head_bps = [i for i, b in enumerate(self.head) if b.breakpoint]
        self.totals: list[int] = []                         # Σ m.tokens after each message
        self.present: Counter[str] = Counter()              # reference -> messages holding it
        self.files: Counter[str] = Counter()                # path -> messages holding its content

    @property
    def tokens(self) -> int:
        """Σ tokens of the messages (the head not included)."""
        return self.totals[-1] if self.totals else 0

    def update(self, context: Sequence[Message], kept: int | None = None) -> None:
        """Make `context` the current one; `kept`: its leading messages known to be unchanged."""
        old = self.messages
        if kept is None:
            kept = 0
            for a, b in zip(old, context):
                if a is not b and (a.key != b.key or a.tokens != b.tokens):
                    break
                kept += 1
        kept = max(0, min(kept, len(old), len(context)))
        if kept < len(old):
            for m in old[kept:]:
                self.present.subtract(self.refs.held(m))
                if self.content is not None:
                    paths = self.content.paths(m)
                    if paths:
                        self.files.subtract(paths)
            del old[kept:]
            del self.digests[len(self.head) + kept:]
            del self.sizes[len(self.head) + kept:]
            del self.totals[kept:]
        self._append(context[i] for i in range(kept, len(context)))

    def extend(self, messages: Iterable[Message]) -> None:
        """Add `messages` after the current context (a re-read's call and result)."""
        self._append(messages)

    def _append(self, messages: Iterable[Message]) -> None:
        old = self.messages
        digest = self.digests[-1] if self.digests else ""
        size = self.sizes[-1] if self.sizes else 0
        total = self.totals[-1] if self.totals else 0
        for m in messages:
            old.append(m)
            digest = _digest(digest, m.key)
            self.digests.append(digest)
            size += max(0, m.tokens)
            self.sizes.append(size)
            total += m.tokens
            self.totals.append(total)
            self.present.update(self.refs.held(m))
            if self.content is not None:
                paths = self.content.paths(m)
                if paths:
                    self.files.update(paths)

    def found(self, wanted: Iterable[str]) -> int:
        """How many of `wanted` the current context holds (as `ReferenceIndex.found`)."""
        present = self.present
        return sum(1 for r in set(wanted) if present.get(r, 0) > 0)

    def request(self, cache: PrefixCache, now: float, ttl: str | float) -> CacheUsage:
        """`cache.request(mark_last(head + context blocks), now, ttl)` from the kept digests: the
        breakpoints are the head's and the last block."""
        n = len(self.digests)
        if n == 0:
            cache.expire(now)
            return CacheUsage()
        bps = self.head_bps if self.head_bps and self.head_bps[-1] == n - 1 else [*self.head_bps, n - 1]
        return bill(cache, self.digests, self.sizes, bps, now, ttl)


def bill(cache: PrefixCache, digests: Sequence[str], sizes: Sequence[int], bps: Sequence[int], now: float,
         ttl: str | float) -> CacheUsage:
    """`PrefixCache.request` for a request given by its prefix digests, the running size after
    each block and its breakpoints (ascending, the last one the last block)."""
    cache.expire(now)
    total = sizes[-1]
    last = bps[-1]
    upto = sizes[last]
    if upto < cache.min_cacheable:
        return CacheUsage(input=total)
    read_end, read = 0, 0
    for bp in reversed(bps):
        for j in range(bp, max(-1, bp - cache.lookback - 1), -1):
            hit = cache.entries.get(digests[j])
            if hit is not None and hit[1] >= now:
                read_end, read = j + 1, hit[0]
                break
        if read_end:
            break
    life = ttl_seconds(ttl)
    if read_end:
        cache._keep(digests[read_end - 1], cache.entries[digests[read_end - 1]][0], now + life)
    for i in bps:
        if sizes[i] >= cache.min_cacheable:
            cache._keep(digests[i], sizes[i], now + life)
    usage = CacheUsage(input=total - upto, cache_read=read)
    setattr(usage, write_bucket(ttl), max(0, upto - read))
    return usage


def blocks_of(head: Sequence[Block], context: Sequence[Message]) -> list[Block]:
    """The blocks `RunningContext.request` prices, for `PrefixCache.request` (tests)."""
    return [*head, *(Block(m.key, max(0, m.tokens)) for m in context)]
