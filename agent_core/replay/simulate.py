"""Walking one trajectory under one policy and pricing every call it would have made.

The policy decides what each recorded request's context holds (and which summary calls it makes
before it); this module prices those calls with a `PrefixCache` per model (cache_misses.py: a
request never reads what another model wrote) — the head (system
prompt and tools, as validate.py splits it) then one block per context message keyed by `Message.key`, so an
unchanged message reads from the cache — with breakpoints on the head and the last message, the
TTL of the policy and the log's timestamps. Output tokens are the logged ones; dollars come from
genai-prices through the `Pricer`, split by bucket.

Summary calls: every call a policy's step makes (`Step.calls`: the LLM summary of `cc`, `summary`
and `ctxtui`, the server's compaction step) is priced before its request, as a request reading the
context it summarises — from the cache where that prefix is shared — plus the summary prompt, and
writing the summary's sized output; in `cost_usd` and `compaction_cost_usd`, counted in
`summary_calls`.

Content kept (content.py): each use of a file the trajectory had read keeps its content when the
context sent for that request still carries it; each use that does not is a re-read. The ones the
recorded answer makes itself are in the log and priced with its requests (`rereads_logged`); for
each other one replay adds the round trip the agent would have made, priced like any request
through the same prompt cache, apart from `cost_usd`:

    reread_usd += price(model, cache_read = head + context sent (what the request just cached),
                        cache_write(TTL) = the read call + the file's latest read result,
                        output = REREAD_CALL_TOKENS)

and the call and its result join the policy's context (`Policy.reread`, when it has one) before the
next request's messages, where the recorded answer goes after them: the later requests carry the
file, a later use of it keeps its content, and a compaction may clear it again.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Protocol, Sequence

from compaction.accounting.cache_model import BUCKETS, Block, CacheUsage, chain, mark_last
from compaction.cache_economics import REREAD_CALL_TOKENS

from agent_core.logs.trajectory import Message, Request, Trajectory
from agent_core.pricing.pricer import Pricer
from agent_core.replay.cache_misses import ModelCaches
from agent_core.replay.content import ContentIndex, Use
from agent_core.replay.references import ReferenceIndex, user_prompts
from agent_core.replay.running import RunningContext
from agent_core.replay.validate import head_blocks


@dataclass
class SummaryCall:
    """A summary call a policy makes before a request: the context it reads (sharing the main
    prefix), the summary prompt after it, and the summary it writes."""
    context: list[Message]
    prompt_tokens: int
    output_tokens: int
    layer: str


@dataclass
class Step:
    """What a policy sent for one recorded request. `kept`: how many leading messages of `context`
    are the previous step's, unchanged (None: not known, they are compared), so pricing it costs
    only what changed."""
    context: Sequence[Message]
    calls: list[SummaryCall] = field(default_factory=list)
    compactions: list[str] = field(default_factory=list)     # layers that acted before this request
    kept: int | None = None
    refused: bool = False          # the API refused it once as too long first (a reactive policy; not billed)


class Policy(Protocol):
    """What replay runs. A policy may also have `reread(messages)`: messages replay adds to the
    conversation (a re-read's call and result) before the next request's own; and `close()`."""
    name: str
    ttl: str

    def step(self, request: Request) -> Step: ...


@dataclass
class PolicyRun:
    """Everything the report says about one policy on one trajectory."""
    name: str
    cost_usd: float = 0.0
    cost_by_bucket: dict[str, float] = field(default_factory=lambda: dict.fromkeys(BUCKETS, 0.0))
    tokens_by_bucket: dict[str, int] = field(default_factory=lambda: dict.fromkeys(BUCKETS, 0))
    compaction_cost_usd: float = 0.0
    overflows: int = 0
    compactions: Counter = field(default_factory=Counter)
    context: list[int] = field(default_factory=list)
    cost_cum: list[float] = field(default_factory=list)
    markers: list[list] = field(default_factory=list)
    references_kept: int = 0
    references_total: int = 0
    content_kept: int = 0          # uses of a file read earlier whose content the context sent held
    content_total: int = 0
    rereads: int = 0               # uses whose content the context had lost (content_total - content_kept)
    rereads_logged: int = 0        # of them, the ones the recorded answer made itself (priced as recorded)
    reread_usd: float = 0.0        # the others' round trips (not in cost_usd)
    summary_calls: int = 0         # the policy's summary calls (priced in cost_usd and compaction_cost_usd)
    refusals: int = 0              # requests the API refused as too long before a reactive compaction
    reread_events: list[tuple[int, str, bool]] = field(default_factory=list)   # (request index, path, added)
    user_messages_kept: int = 0
    user_messages_total: int = 0
    unpriced_models: set[str] = field(default_factory=set)

    @property
    def cache_hit_rate(self) -> float:
        t = self.tokens_by_bucket
        total = t["input"] + t["cache_write_5m"] + t["cache_write_1h"] + t["cache_read"]
        return t["cache_read"] / total if total else 0.0


class Biller:
    """One policy run's prompt caches (one per model) and pricing."""

    def __init__(self, trajectory: Trajectory, ttl: str, pricer: Pricer, run: PolicyRun) -> None:
        self.caches = ModelCaches()
        self.ttl = ttl
        self.pricer = pricer
        self.run = run
        self.head = head_blocks(trajectory)
        if trajectory.requests and self.head and self.head[0].key.startswith("head-warm"):
            # the part of the head Claude Code already had cached when the session began (validate.py)
            first = trajectory.requests[0]
            self.caches.warm(first.model, chain(self.head[:1])[0], self.head[0].tokens, first.timestamp + 3600)

    def bill(self, blocks: list[Block], now: float, output: int, model: str) -> float:
        """Bill a request given whole (a summary call)."""
        return self.charge(self.caches.get(model).request(mark_last(blocks), now, self.ttl), output, model)

    def charge(self, used: CacheUsage, output: int, model: str) -> float:
        """Price a request into the run's cost."""
        usage = used.buckets(output)
        for k, v in usage.items():
            self.run.tokens_by_bucket[k] += v
        priced = self.pricer.priced(model, usage)
        if priced.total is None or priced.parts is None:
            self.run.unpriced_models.add(model)
            return 0.0
        for k, usd in priced.parts.items():
            self.run.cost_by_bucket[k] += usd
        self.run.cost_usd += priced.total
        return priced.total

    def price(self, used: CacheUsage, output: int, model: str) -> float:
        """A request's dollars, not added to the run's cost (a re-read's round trip)."""
        usd = self.pricer(model, used.buckets(output))
        if usd is None:
            self.run.unpriced_models.add(model)
            return 0.0
        return usd

    def blocks(self, context: Sequence[Message]) -> list[Block]:
        return [*self.head, *(Block(m.key, max(0, m.tokens)) for m in context)]


OnRequest = Callable[[int], None]          # told the count of requests done so far


def simulate(trajectory: Trajectory, policy: Policy, *, window: int, pricer: Pricer,
             refs: ReferenceIndex, on_request: OnRequest | None = None,
             content: ContentIndex | None = None) -> PolicyRun:
    """Walk the trajectory under `policy`. Each request costs what changed in its context since
    the previous one (running.py), not the whole context, so a run is linear in the log.
    `content`: the trajectory's reads and uses (made here when not given; share one between the
    policies of a trajectory)."""
    run = PolicyRun(policy.name)
    biller = Biller(trajectory, policy.ttl, pricer, run)
    content = content if content is not None else ContentIndex(trajectory)
    context = RunningContext(biller.head, refs, content)
    head = max(0, trajectory.overhead_tokens)
    last: Step | None = None
    inject = getattr(policy, "reread", None)
    try:
        for n, req in enumerate(trajectory.requests, 1):
            last = _request(req, policy.step(req), run, biller, context, head, window)
            uses = content.uses[n - 1]
            if uses:
                added = _rereads(req, content, uses, run, biller, context)
                if added and inject is not None:
                    inject(added)
            if on_request is not None:
                on_request(n)
    finally:
        close = getattr(policy, "close", None)
        if close is not None:
            close()
    prompts = user_prompts(trajectory)
    run.user_messages_total = len(prompts)
    run.user_messages_kept = refs.verbatim(prompts, last.context if last else [])
    return run


def _request(req: Request, step: Step, run: PolicyRun, biller: Biller, context: RunningContext, head: int,
             window: int) -> Step:
    """Price one request (and the summary calls before it) and record what the report needs."""
    run.summary_calls += len(step.calls)
    run.refusals += step.refused
    for n, call in enumerate(step.calls):
        blocks = biller.blocks(call.context) + [Block(f"summary-prompt\x00{req.index}\x00{n}", call.prompt_tokens)]
        run.compaction_cost_usd += biller.bill(blocks, req.timestamp, call.output_tokens, req.model)
    for layer in step.compactions:
        run.compactions[layer] += 1
        run.markers.append([req.index, layer])
    context.update(step.context, step.kept)
    tokens = head + context.tokens
    if tokens > window:
        run.overflows += 1
    used = context.request(biller.caches.get(req.model), req.timestamp, biller.ttl)
    biller.charge(used, int(req.usage.get("output", 0)), req.model)
    run.context.append(tokens)
    run.cost_cum.append(run.cost_usd)
    wanted = req.response.references
    if wanted:
        run.references_total += len(wanted)
        run.references_kept += context.found(wanted)
    return step


def _rereads(req: Request, content: ContentIndex, uses: Sequence[Use], run: PolicyRun, biller: Biller,
             context: RunningContext) -> list[Message]:
    """Count the request's uses kept and lost; for each lost one the log does not re-read itself,
    price the round trip through the cache and return the messages it adds (module docstring)."""
    lost = ContentIndex.lost(uses, context.files)
    run.content_total += len(uses)
    run.content_kept += len(uses) - len(lost)
    added: list[Message] = []
    for use in lost:
        run.rereads += 1
        run.reread_events.append((req.index, use.path, use.charged))
        if not use.charged:
            run.rereads_logged += 1
            continue
        pair = content.reread_messages(use, req.index, req.timestamp)
        context.extend(pair)
        used = context.request(biller.caches.get(req.model), req.timestamp, biller.ttl)
        run.reread_usd += biller.price(used, REREAD_CALL_TOKENS, req.model)
        added += pair
    return added
