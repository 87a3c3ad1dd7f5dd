"""The prefix-cache simulator on hand-computed cases: every figure below is worked out by hand."""
from __future__ import annotations

import pytest

from compaction.accounting.cache_model import (LOOKBACK, Block, PrefixCache, Rates, chain, mark_last, ttl_seconds,
                                               write_bucket)


def blocks(*sizes: int, prefix: str = "b") -> list[Block]:
    return [Block(f"{prefix}{i}", n) for i, n in enumerate(sizes)]


def request(sizes: list[int], keys: list[str] | None = None) -> list[Block]:
    """A request of blocks with a breakpoint on the last one (how ctxtui marks a request)."""
    keys = keys or [f"b{i}" for i in range(len(sizes))]
    return mark_last([Block(k, n) for k, n in zip(keys, sizes)])


def test_first_request_writes_everything_up_to_its_last_breakpoint():
    cache = PrefixCache()
    u = cache.request(request([2_000, 1_000, 500]), now=0.0)
    assert (u.cache_read, u.cache_write_5m, u.cache_write_1h, u.input) == (0, 3_500, 0, 0)


def test_a_hit_reads_the_previous_prefix_and_writes_only_what_is_new():
    cache = PrefixCache()
    cache.request(request([2_000, 1_000]), now=0.0)
    u = cache.request(request([2_000, 1_000, 700, 300]), now=60.0)
    assert (u.cache_read, u.cache_write_5m, u.input) == (3_000, 1_000, 0)


def test_blocks_after_the_last_breakpoint_are_plain_input():
    cache = PrefixCache()
    bs = [Block("a", 2_000, breakpoint=True), Block("b", 400)]
    u = cache.request(bs, now=0.0)
    assert (u.cache_write_5m, u.input) == (2_000, 400)


@pytest.mark.parametrize("ttl, gap, hit", [("5m", 299.0, True), ("5m", 301.0, False),
                                           ("1h", 3_599.0, True), ("1h", 3_601.0, False)])
def test_a_prefix_expires_after_its_ttl(ttl, gap, hit):
    cache = PrefixCache()
    cache.request(request([3_000]), now=0.0, ttl=ttl)
    u = cache.request(request([3_000, 500]), now=gap, ttl=ttl)
    if hit:
        assert (u.cache_read, u.cache_write) == (3_000, 500)
    else:
        assert (u.cache_read, u.cache_write) == (0, 3_500)
    assert getattr(u, write_bucket(ttl)) == u.cache_write   # the bucket follows the TTL


def test_a_hit_refreshes_the_expiry():
    cache = PrefixCache()
    cache.request(request([3_000]), now=0.0)
    cache.request(request([3_000]), now=250.0)         # read at 250: lives until 550
    u = cache.request(request([3_000, 100]), now=500.0)  # 500 s after the write, 250 after the read
    assert u.cache_read == 3_000
    u = cache.request(request([3_000, 100, 50]), now=801.0)  # 301 s after the last use
    assert u.cache_read == 0 and u.cache_write_5m == 3_150


def test_a_rewrite_in_the_middle_reads_up_to_the_change_and_writes_after_it():
    # 10 blocks of 500; a request had a breakpoint after block 3 and the last one; block 5 changes
    cache = PrefixCache()
    keys = [f"b{i}" for i in range(10)]
    cache.request(mark_last([Block(k, 500) for k in keys], 3), now=0.0)
    changed = keys[:5] + ["b5-cleared"] + keys[6:]
    sizes = [500] * 5 + [20] + [500] * 4
    u = cache.request(mark_last([Block(k, n) for k, n in zip(changed, sizes)], 3), now=10.0)
    # the longest warm prefix still equal is blocks 0-3 (2,000 tokens, a breakpoint of the first request);
    # block 4 is unchanged but no entry ends there, so it is written again with the rest
    assert (u.cache_read, u.cache_write_5m) == (2_000, 500 + 20 + 4 * 500)


def test_the_lookback_finds_a_prefix_at_most_twenty_blocks_before_a_breakpoint():
    first = [Block(f"b{i}", 100) for i in range(12)]
    cache = PrefixCache()
    cache.request(mark_last(first), now=0.0)                        # entry after block 11 (1,200 tokens)
    near = first + [Block(f"n{i}", 100) for i in range(LOOKBACK)]   # the old end is 20 blocks back
    u = cache.request(mark_last(near), now=1.0)
    assert (u.cache_read, u.cache_write_5m) == (1_200, 2_000)
    cache = PrefixCache()
    cache.request(mark_last(first), now=0.0)
    far = first + [Block(f"n{i}", 100) for i in range(LOOKBACK + 1)]  # 21 blocks back: out of reach
    u = cache.request(mark_last(far), now=1.0)
    assert (u.cache_read, u.cache_write_5m) == (0, 3_300)


def test_a_second_breakpoint_extends_the_reach_of_the_lookback():
    first = [Block(f"b{i}", 100) for i in range(12)]
    cache = PrefixCache()
    cache.request(mark_last(first), now=0.0)
    far = first + [Block(f"n{i}", 100) for i in range(LOOKBACK + 5)]
    u = cache.request(mark_last(far, 13), now=1.0)   # a breakpoint 2 blocks after the old end
    assert (u.cache_read, u.cache_write_5m) == (1_200, 2_500)


def test_a_prefix_under_the_minimum_is_never_cached():
    cache = PrefixCache()
    u = cache.request(request([600, 300]), now=0.0)
    assert (u.cache_write, u.input) == (0, 900)
    u = cache.request(request([600, 300, 200]), now=1.0)      # 1,100: now it is written, nothing read
    assert (u.cache_read, u.cache_write_5m, u.input) == (0, 1_100, 0)
    small = PrefixCache(min_cacheable=2_048)                  # Haiku's minimum
    assert small.request(request([1_500]), now=0.0).input == 1_500


def test_warm_read_does_not_change_the_cache():
    cache = PrefixCache()
    cache.request(request([3_000]), now=0.0)
    before = dict(cache.entries)
    assert cache.warm_read(request([3_000, 10]), now=100.0) == (1, 3_000)
    assert cache.warm_read(request([3_000, 10]), now=400.0) == (0, 0)
    assert cache.entries == before


def test_prices_follow_the_anthropic_multipliers():
    r = Rates.from_input(3.0, 15.0)
    assert r.cache_write_5m == pytest.approx(3.75e-6) and r.cache_write_1h == pytest.approx(6e-6)
    assert r.cache_read == pytest.approx(0.3e-6)
    usage = {"input": 1_000, "output": 100, "cache_write_5m": 2_000, "cache_read": 10_000}
    assert r.price(usage) == pytest.approx((1_000 * 3 + 100 * 15 + 2_000 * 3.75 + 10_000 * 0.3) / 1e6)
    assert Rates.from_mapping({"input": 1e-6}).price({"input": 5, "cache_read": 7}) == pytest.approx(5e-6)


def test_ttl_and_chain_helpers():
    assert ttl_seconds("5m") == 300.0 and ttl_seconds("1h") == 3_600.0 and ttl_seconds(42) == 42.0
    with pytest.raises(ValueError, match="5m or 1h"):
        ttl_seconds("2h")
    a, b = chain(blocks(1, 2, 3)), chain(blocks(1, 2, 3))
    assert a == b and len(set(a)) == 3
    assert chain([Block("x", 1), Block("y", 1)])[1] != chain([Block("y", 1), Block("x", 1)])[1]


def test_a_refresh_never_shortens_a_one_hour_entry():
    cache = PrefixCache()
    cache.request(request([3_000]), now=0.0, ttl="1h")
    cache.request(request([3_000, 100]), now=10.0, ttl="5m")    # reads the 1h entry with a 5m request
    u = cache.request(request([3_000, 50]), now=1_800.0, ttl="5m")
    assert u.cache_read == 3_000                                # still warm after 30 minutes


def test_many_requests_within_one_ttl_keep_a_bounded_cache_that_still_reads_the_conversation():
    """A thousand-turn demo session runs within one TTL: every prefix it wrote stayed warm, and each
    request went over all of them. The least recently written or read go past MAX_ENTRIES; the
    latest prefix and the system prompt's (read by every request) stay."""
    from compaction.accounting import cache_model

    cache = PrefixCache()
    system = Block("system", 3_000, breakpoint=True)
    n = cache_model.MAX_ENTRIES * 2
    for i in range(n):
        u = cache.request(mark_last([system, Block(f"m{i}", 100)]), now=float(i))
        assert u.cache_read == (3_000 if i else 0)          # the system prompt, every time
    assert len(cache.entries) <= cache_model.MAX_ENTRIES
    latest = cache.request(mark_last([system, Block(f"m{n - 1}", 100), Block("next", 50)]), now=float(n))
    assert latest.cache_read == 3_100                       # the last prefix written is still warm
    first = cache.request(mark_last([system, Block("m0", 100), Block("next", 50)]), now=float(n))
    assert first.cache_read == 3_000                        # the first one's went (only the system prompt)
