"""The prompt cache as the API prices it: a pure model the engine, the demo and `ctxtui replay` share.

A request is a sequence of blocks in the API's order (tools, system, messages), some of them ending
in a cache breakpoint. The API keeps an entry for the prefix ending at each breakpoint of a recent
request; a new request reads the longest such prefix that is still warm — found at one of its own
breakpoints or at a block boundary up to `LOOKBACK` blocks before one — writes everything after it
up to its last breakpoint, and bills what follows the last breakpoint as plain input. A hit
refreshes the entry's expiry. Writes cost 1.25× input (5-minute TTL) or 2× (1-hour); reads 0.1×.

Rates (dollars per token, per bucket) are handed in; this package never looks prices up.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Iterable, Sequence

TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}
LOOKBACK = 20                 # block boundaries the API checks before each breakpoint
MIN_CACHEABLE = 1_024         # a shorter prefix is never cached (Sonnet/Opus; Haiku needs 2,048)
BUCKETS = ("input", "output", "cache_write_5m", "cache_write_1h", "cache_read")


def ttl_seconds(ttl: str | float) -> float:
    """`"5m"`, `"1h"` or a number of seconds."""
    if isinstance(ttl, str):
        try:
            return TTL_SECONDS[ttl]
        except KeyError:
            raise ValueError(f"cache TTL must be 5m or 1h, got {ttl!r}") from None
    return float(ttl)


def ttl_of(usage: dict[str, int], default: str) -> str:
    """The TTL a request's writes were logged under (its `cache_write_5m` / `cache_write_1h`
    buckets); `default` when it wrote nothing."""
    w5, w1 = usage.get("cache_write_5m", 0), usage.get("cache_write_1h", 0)
    if w5 == w1 == 0:
        return default
    return "1h" if w1 >= w5 else "5m"


def write_bucket(ttl: str | float) -> str:
    return "cache_write_1h" if ttl_seconds(ttl) > TTL_SECONDS["5m"] else "cache_write_5m"


@dataclass(frozen=True)
class Rates:
    """Dollars per token for each bucket. `from_input` applies Anthropic's multipliers."""
    input: float
    output: float
    cache_write_5m: float
    cache_write_1h: float
    cache_read: float

    @classmethod
    def from_input(cls, input_per_mtok: float, output_per_mtok: float) -> "Rates":
        i, o = input_per_mtok / 1e6, output_per_mtok / 1e6
        return cls(i, o, 1.25 * i, 2.0 * i, 0.1 * i)

    @classmethod
    def from_mapping(cls, rates: dict[str, float]) -> "Rates":
        return cls(*(float(rates.get(k, 0.0)) for k in BUCKETS))

    def get(self, bucket: str) -> float:
        return float(getattr(self, bucket))

    def price(self, usage: dict[str, int]) -> float:
        """Dollars of one request from its buckets (missing buckets count 0)."""
        return sum(self.get(k) * usage.get(k, 0) for k in BUCKETS)

    def write(self, ttl: str | float) -> float:
        return self.get(write_bucket(ttl))


@dataclass(frozen=True, slots=True)
class Block:
    """One cacheable unit of a request: `key` identifies its content, `tokens` its size,
    `breakpoint` whether a cache_control marker ends it."""
    key: str
    tokens: int
    breakpoint: bool = False


def chain(blocks: Iterable[Block]) -> list[str]:
    """The prefix digest after each block: equal digests mean equal prefixes."""
    out: list[str] = []
    h = ""
    for b in blocks:
        h = hashlib.blake2b(f"{h}\x00{b.key}".encode(), digest_size=12).hexdigest()
        out.append(h)
    return out


def mark_last(blocks: Sequence[Block], *also: int) -> list[Block]:
    """`blocks` with a breakpoint on the last block and on the blocks at the indexes `also`
    (negative counts from the end): how ctxtui and Claude Code mark a request."""
    n = len(blocks)
    want = {n - 1, *((i + n) if i < 0 else i for i in also)}
    return [Block(b.key, b.tokens, b.breakpoint or i in want) for i, b in enumerate(blocks)]


@dataclass
class CacheUsage:
    """What one request is billed for input, by bucket (the API's usage fields)."""
    input: int = 0
    cache_write_5m: int = 0
    cache_write_1h: int = 0
    cache_read: int = 0

    @property
    def cache_write(self) -> int:
        return self.cache_write_5m + self.cache_write_1h

    @property
    def total(self) -> int:
        return self.input + self.cache_write + self.cache_read

    def buckets(self, output: int = 0) -> dict[str, int]:
        return {"input": self.input, "output": output, "cache_write_5m": self.cache_write_5m,
                "cache_write_1h": self.cache_write_1h, "cache_read": self.cache_read}


MAX_ENTRIES = 1024     # warm entries kept; past it the least recently written or read go first


@dataclass
class PrefixCache:
    """The warm cache entries: prefix digest -> (tokens of that prefix, expiry time), oldest write
    or read first. A session that makes many requests within one TTL (a demo session's thousand
    turns in a minute) would otherwise keep every prefix it ever wrote, and each request went over
    all of them; a request reads only prefixes within `lookback` blocks of its breakpoints, which
    its recent predecessors wrote or read, so the least recently used beyond MAX_ENTRIES go."""
    min_cacheable: int = MIN_CACHEABLE
    lookback: int = LOOKBACK
    entries: dict[str, tuple[int, float]] = field(default_factory=dict)

    def warm_read(self, blocks: Sequence[Block], now: float, digests: Sequence[str] | None = None
                  ) -> tuple[int, int]:
        """(index after the last block read, tokens read) of the longest warm prefix this request
        would read; (0, 0) on a miss. Does not change the cache."""
        digests = chain(blocks) if digests is None else digests
        best_end, best_tokens = 0, 0
        bps = [i for i, b in enumerate(blocks) if b.breakpoint]
        for bp in reversed(bps):
            for j in range(bp, max(-1, bp - self.lookback - 1), -1):
                hit = self.entries.get(digests[j])
                if hit is not None and hit[1] >= now:
                    return j + 1, hit[0]      # scanning back from the latest breakpoint: the longest
        return best_end, best_tokens

    def request(self, blocks: Sequence[Block], now: float, ttl: str | float = "5m") -> CacheUsage:
        """Bill one request and remember what it wrote or refreshed."""
        self.expire(now)
        digests = chain(blocks)
        total = sum(b.tokens for b in blocks)
        bps = [i for i, b in enumerate(blocks) if b.breakpoint]
        if not bps:
            return CacheUsage(input=total)
        last = bps[-1]
        upto = sum(b.tokens for b in blocks[:last + 1])
        if upto < self.min_cacheable:
            return CacheUsage(input=total)
        read_end, read = self.warm_read(blocks, now, digests)
        life = ttl_seconds(ttl)
        if read_end:
            self._keep(digests[read_end - 1], self.entries[digests[read_end - 1]][0], now + life)
        running = 0
        for i, b in enumerate(blocks[:last + 1]):
            running += b.tokens
            if b.breakpoint and running >= self.min_cacheable:
                self._keep(digests[i], running, now + life)
        written = max(0, upto - read)
        usage = CacheUsage(input=total - upto, cache_read=read)
        setattr(usage, write_bucket(ttl), written)
        return usage

    def _keep(self, digest: str, tokens: int, until: float) -> None:
        """Write or refresh an entry; a refresh never shortens it (a 1-hour entry read by a request
        that asks for 5 minutes keeps its hour)."""
        old = self.entries.pop(digest, None)        # re-inserted: the newest
        self.entries[digest] = (tokens, until if old is None else max(old[1], until))

    def expire(self, now: float) -> None:
        if len(self.entries) > 64:
            self.entries = {k: v for k, v in self.entries.items() if v[1] >= now}
        while len(self.entries) > MAX_ENTRIES:
            del self.entries[next(iter(self.entries))]
