"""The incremental pieces that keep replay linear (running.py, references.py) against the plain
computations they stand for: `PrefixCache.request` on the whole request, and the substring test
of every reference in every text."""
from __future__ import annotations

import random

from compaction.accounting.cache_model import Block, PrefixCache, mark_last

from agent_core.logs.trajectory import Message, Request, Trajectory
from agent_core.replay.policies import NoCompaction, Prefix
from agent_core.replay.references import DIRECT_SEARCH_REFS, ReferenceIndex
from agent_core.replay.running import RunningContext, blocks_of
from agent_core.replay.synthetic import generate


def _trajectory(refs: list[str]) -> Trajectory:
    t = Trajectory("t.jsonl", "s", "claude-sonnet-4-5", overhead_tokens=0)
    answer = Message("assistant", "assistant", 1, "a", "", references=tuple(refs))
    t.requests = [Request(0, 0.0, t.model, [], answer, {})]
    return t


def test_running_context_bills_as_the_whole_request_would():
    """Random contexts that grow, lose their tail, get rewritten in the middle or start over, with
    pauses past the TTL: the kept digests give the cache's own answer, request by request."""
    rng = random.Random(3)
    head = [Block("head-warm", 3_000, True), Block("head", 900, True)]
    pool = [Message("user", "tool_result", rng.choice((0, 40, 700, 2_500)), f"k{i}") for i in range(400)]
    refs = ReferenceIndex(_trajectory([]))
    for kept_known in (True, False):
        plain, running = PrefixCache(), PrefixCache()
        ctx = RunningContext(head, refs)
        context: list[Message] = []
        now = 1_000.0
        for _ in range(300):
            op = rng.random()
            kept: int | None = len(context)
            if op < 0.6:
                context = context + rng.sample(pool, rng.randint(0, 4))
            elif op < 0.75:
                cut = rng.randint(0, len(context))
                context, kept = context[:cut] + rng.sample(pool, rng.randint(0, 2)), cut
            elif op < 0.9 and context:
                i = rng.randrange(len(context))
                context = context[:i] + [rng.choice(pool)] + context[i + 1:]
                kept = i
            else:
                context, kept = rng.sample(pool, rng.randint(0, 3)), 0
            now += rng.choice((1.0, 30.0, 200.0, 400.0, 4_000.0))
            ttl = rng.choice(("5m", "1h"))
            want = plain.request(mark_last(blocks_of(head, context)), now, ttl)
            ctx.update(context, kept if kept_known else None)
            assert ctx.request(running, now, ttl) == want
            assert ctx.tokens == sum(m.tokens for m in context)
            assert running.entries == plain.entries


def test_running_context_counts_references_as_the_scan_does():
    texts = ["open src/app.py", "def handle_login(): ...", "nothing here", "src/app.py and lib/x.ex"]
    msgs = [Message("user", "tool_result", 10, f"m{i}", t) for i, t in enumerate(texts)]
    refs = ReferenceIndex(_trajectory(["src/app.py", "handle_login", "lib/x.ex", "gone.py"]))
    ctx = RunningContext([], refs)
    for context in ([msgs[0]], msgs[:3], [msgs[2]], [msgs[2], msgs[3]], []):
        ctx.update(context)
        for wanted in (("src/app.py",), ("handle_login", "lib/x.ex", "gone.py"), ()):
            assert ctx.found(wanted) == refs.found(wanted, context)


def test_the_reference_index_finds_exactly_the_substrings():
    """Past DIRECT_SEARCH_REFS references the index searches only candidates: it must still find
    every reference a plain `in` finds, and no other (runs inside, at the edges, bare, no word at all)."""
    rng = random.Random(5)
    words = ["parse", "handle_login", "x", "cache_7", "é", "a1", "_", "py"]
    seps = ["/", ".", " ", "(", "::", "-", ""]

    def piece() -> str:
        return "".join(rng.choice(words) + rng.choice(seps) for _ in range(rng.randint(1, 4)))
    refs = sorted({piece().strip() or "x" for _ in range(300)} | {"src/app.py", "def handle", "::", "é.py"})
    assert len(refs) > DIRECT_SEARCH_REFS
    index = ReferenceIndex(_trajectory(refs))
    for i in range(300):
        text = " ".join(piece() for _ in range(rng.randint(0, 30)))
        m = Message("user", "tool_result", 1, f"t{i}", text)
        assert index.held(m) == frozenset(r for r in refs if r in text), text


def test_none_shares_one_list_and_says_what_it_kept():
    traj = generate(30, seed=2)
    policy = NoCompaction("5m")
    steps = [policy.step(r) for r in traj.requests]
    for a, b in zip(steps, steps[1:]):
        assert isinstance(b.context, Prefix) and b.kept == len(a.context)
        assert list(b.context[: len(a.context)]) == list(a.context)     # an earlier step is unchanged
    assert len(steps[-1].context) == sum(len(r.added) for r in traj.requests)
    assert steps[-1].context[-1] is traj.requests[-1].added[-1] and steps[0].context == list(steps[0].context)
