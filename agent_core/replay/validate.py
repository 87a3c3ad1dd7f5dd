"""The cache simulator checked against a log: replay the RECORDED trajectory (as it happened, with
the log's own compactions and summary calls) through `compaction.accounting.cache_model.PrefixCache` and
compare its cache reads and writes with the logged ones, request by request.

How Claude Code 2.1 caches, as its logs show it (and so what is simulated):
- breakpoints on the head and on the last message: each request reads exactly the previous
  request's cached prefix (cache read n = cache read + write of n−1), and after a compaction the
  first request reads exactly the system prompt's end (the overhead);
- the head is two blocks: the part already warm when the session began (its first request's
  cache read: the tools and system prompt Claude Code shares across sessions), pre-warmed, then
  the rest of the system prompt; both end in a breakpoint;
- the TTL of each request is the one its writes were logged under (`cache_creation`'s 1-hour vs
  5-minute split); a request that wrote nothing uses the trajectory's usual one;
- the compaction sub-agent's call shares the main prefix (it reads the whole conversation) and
  appends its prompt: simulated at its own time, between the main requests.

- one cache per model (cache_misses.py): a request of another model reads nothing of it.

Error figures: `cache_read_error_pct = 100 · Σ|sim_read_i − log_read_i| / Σ log_read_i`, and the same
for writes (both write buckets together), over every request of the trajectory (summary calls
included). `misses` lists the requests the log shows missing the cache, each with its reason
(cache_misses.py): a model switch or a TTL, which the simulator reproduces, or a change of the
head or of the first message block that the log does not record (the cache emptied after a
`<task-notification>` turn).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from compaction.accounting.cache_model import Block, chain, ttl_of

from agent_core.logs.trajectory import Message, Request, Trajectory
from agent_core.logs.trajectory_sizes import input_total
from compaction.accounting.cache_doctor import tolerance

from agent_core.replay.cache_misses import ModelCaches, RecentPrefixes, miss_reason
from agent_core.replay.report_model import CacheCheck, CacheMiss
from agent_core.replay.running import bill


@dataclass(frozen=True)
class Checked:
    """One request: what the simulator said and what the log says."""
    index: int
    purpose: str
    timestamp: float
    sim_read: int
    sim_write: int
    log_read: int
    log_write: int
    model: str = ""
    expected: int = 0              # what it would have read had only its content mattered
    reason: str | None = None      # why the log shows it missing the cache (None: it did not)


@dataclass
class Validation:
    path: str
    agent_id: str | None
    checked: list[Checked] = field(default_factory=list)

    @property
    def cache_read_error_pct(self) -> float:
        return _error([(c.sim_read, c.log_read) for c in self.checked])

    @property
    def cache_write_error_pct(self) -> float:
        return _error([(c.sim_write, c.log_write) for c in self.checked])

    @property
    def misses(self) -> list[Checked]:
        """Requests the log shows missing the cache, each with its `reason`."""
        return [c for c in self.checked if c.reason is not None]

    def check(self) -> CacheCheck:
        """The report's `validation`: the error figures over every request, the misses with their
        reasons, and the figures without the misses (what the simulator gets wrong on the rest)."""
        misses = self.misses
        rest = [c for c in self.checked if c.reason is None]
        read_rest = _error([(c.sim_read, c.log_read) for c in rest])
        write_rest = _error([(c.sim_write, c.log_write) for c in rest])
        return CacheCheck(round(self.cache_read_error_pct, 3), round(self.cache_write_error_pct, 3),
                          misses=tuple(CacheMiss(c.index, c.reason or "", c.log_read, c.expected) for c in misses),
                          cache_read_error_pct_without_misses=round(read_rest, 3),
                          cache_write_error_pct_without_misses=round(write_rest, 3))

    def summary(self) -> dict[str, float | list[int]]:
        """`check()` as the `validation` object of `ctxtui replay --json`."""
        return self.check().to_json()


def _error(pairs: list[tuple[int, int]]) -> float:
    """100 · Σ|sim − log| / Σ log (0 when the log has none and the simulator agrees)."""
    logged = sum(log for _, log in pairs)
    off = sum(abs(sim - log) for sim, log in pairs)
    if logged == 0:
        return 0.0 if off == 0 else 100.0
    return 100.0 * off / logged


def _writes(usage: dict[str, int]) -> int:
    return int(usage.get("cache_write_5m", 0)) + int(usage.get("cache_write_1h", 0))


def usual_ttl(traj: Trajectory) -> str:
    w5 = sum(r.usage.get("cache_write_5m", 0) for r in traj.requests)
    w1 = sum(r.usage.get("cache_write_1h", 0) for r in traj.requests)
    return "1h" if w1 > w5 else "5m"


def head_blocks(traj: Trajectory) -> list[Block]:
    """The overhead as the cache sees it: the part warm at the start, then the rest."""
    tag = f"{traj.path}\x00{traj.agent_id or ''}"
    warm = max(0, min(traj.head_cached_tokens, traj.overhead_tokens))
    out = []
    if warm:
        out.append(Block(f"head-warm\x00{tag}", warm, True))
    if traj.overhead_tokens - warm > 0:
        out.append(Block(f"head\x00{tag}", traj.overhead_tokens - warm, True))
    return out


def _blocks(head: list[Block], context: list[Message], tail: Sequence[Block] = ()) -> list[Block]:
    blocks = head + [Block(m.key, max(0, m.tokens)) for m in context] + list(tail)
    if blocks:
        last = blocks[-1]
        blocks[-1] = Block(last.key, last.tokens, True)
    return blocks


class _Checker:
    """The recorded requests in time order through one cache per model, each compared with its log."""

    def __init__(self, traj: Trajectory, head: list[Block]) -> None:
        self.default = usual_ttl(traj)
        self.head = sum(b.tokens for b in head)
        self.caches = ModelCaches()
        self.recent = RecentPrefixes()
        self.previous: tuple[str, float, str] | None = None     # model, time, TTL
        if traj.requests and head and head[0].key.startswith("head-warm"):
            first = traj.requests[0]
            self.caches.warm(first.model, chain(head[:1])[0], head[0].tokens, first.timestamp + 3600.0)

    def check(self, req: Request, blocks: list[Block]) -> Checked:
        log_read = int(req.usage.get("cache_read", 0))
        ttl = ttl_of(req.usage, self.default)
        if not blocks:
            return Checked(req.index, req.purpose, req.timestamp, 0, 0, log_read, _writes(req.usage), req.model)
        digests = chain(blocks)
        sizes, total = [], 0
        for b in blocks:
            total += b.tokens
            sizes.append(total)
        bps = [i for i, b in enumerate(blocks) if b.breakpoint]
        expected = self.recent.expected(digests, bps)
        used = bill(self.caches.get(req.model), digests, sizes, bps, req.timestamp, ttl)
        self.recent.add(digests, sizes, bps)
        reason = None
        if expected - log_read > tolerance(expected):
            model, at, previous_ttl = self.previous or (req.model, req.timestamp, ttl)
            reason = miss_reason(model=req.model, previous_model=model, gap=req.timestamp - at,
                                 previous_ttl=previous_ttl, read=log_read, head=self.head)
        self.previous = (req.model, req.timestamp, ttl)
        return Checked(req.index, req.purpose, req.timestamp, used.cache_read, used.cache_write, log_read,
                       _writes(req.usage), req.model, expected, reason)


def validate(traj: Trajectory) -> Validation:
    """Replay `traj` as recorded and compare (module doc)."""
    out = Validation(traj.path, traj.agent_id)
    head = head_blocks(traj)
    checker = _Checker(traj, head)
    calls = sorted(traj.compaction_calls, key=lambda r: r.timestamp)
    previous: list[Message] = []
    for req, context in zip(traj.requests, traj.contexts()):
        while calls and calls[0].timestamp <= req.timestamp:
            out.checked.append(_summary_call(checker, calls.pop(0), head, previous, traj))
        out.checked.append(checker.check(req, _blocks(head, context)))
        previous = context
    for call in calls:
        out.checked.append(_summary_call(checker, call, head, previous, traj))
    return out


def _summary_call(checker: _Checker, call: Request, head: list[Block], context: list[Message],
                  traj: Trajectory) -> Checked:
    """A summary call: the main context it shares, then what it appends (the last answer, the
    results since, its prompt) as one block sized by its logged total."""
    shared = traj.overhead_tokens + sum(m.tokens for m in context)
    extra = max(0, input_total(call.usage) - shared)
    tail = [Block(f"summary-call\x00{call.timestamp}\x00{call.index}", extra)]
    return checker.check(call, _blocks(head, context, tail))
