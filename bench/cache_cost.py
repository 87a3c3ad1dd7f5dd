"""Dollars of input a long generated session costs under the compaction pipeline, priced by the
prefix-cache model (compaction/accounting/cache_model.py), with the cache rule on and off.

The session: a user prompt every few tool rounds; tool results of 200–8,000 characters; 15 s per
call; between prompts the user thinks for 30–120 s, and every fifth prompt is a 10-minute break
(longer than the 5-minute TTL). Every request goes through `Pipeline.run` with a stand-in
summarizer (a 2,000-token summary plus the current round, its call priced as sharing the main
prefix, as the summary call does), and is priced block by block: breakpoints on the system
prompt and tools and on the last message, as ctxtui marks them.

Policies: `cache-aware` (the defaults), `token-only` (the same layers, each on its own token
trigger: `cache_aware=False`), and `summary-only` (snip, microcompact and collapse off).
Usage: `.venv/bin/python bench/cache_cost.py [--calls N] [--windows 200000,60000]`.
"""
from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import random
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from compaction import (ContextBudget, Entry, LayerResult, Pipeline, PipelineConfig, project,  # noqa: E402
                        tool_result_block)
from compaction.accounting.cache_model import Block, PrefixCache, Rates, mark_last  # noqa: E402
from compaction.estimate import estimate_block  # noqa: E402
from compaction.report import CompactionReport  # noqa: E402

OVERHEAD = 4_000            # system prompt + tool definitions
SUMMARY_TOKENS = 2_000
SUMMARY_PROMPT_TOKENS = 800
RATES = Rates.from_input(3.0, 15.0)
TOOLS = ("bash", "read_file", "grep", "edit_file", "glob")
POLICIES = {
    "cache-aware": {},
    "token-only": {"cache_aware": False},
    "summary-only": {"snip_enabled": False, "microcompact_enabled": False, "collapse_enabled": False},
}


class StandInSummary:
    """A summarizing stage without a model: a fixed-size summary, then the current round. Its call
    is priced as the conversation as sent plus the summary prompt (it shares the main prefix)."""
    name = "autocompact"

    def __init__(self, price) -> None:
        self.price = price

    async def __call__(self, entries: list[Entry], ctx) -> LayerResult | None:
        request = project(entries) + [{"role": "user", "content": [
            {"type": "text", "text": "Summarize. " + "p" * (4 * SUMMARY_PROMPT_TOKENS)}]}]
        self.price(request, ctx.now, SUMMARY_TOKENS)
        start = max(i for i, e in enumerate(entries)
                    if e.role == "user" and e.kind == "message" and any(b.get("type") == "text" for b in e.content))
        text = "Summary: " + "s" * (4 * SUMMARY_TOKENS)
        summary = Entry({"role": "user", "content": [{"type": "text", "text": text}]}, kind="summary",
                        timestamp=ctx.now)
        out = [summary] + [Entry(e.message, uuid=e.uuid, timestamp=e.timestamp, response_id=e.response_id)
                           for e in entries[start:]]
        return LayerResult(out, CompactionReport("autocompact", ctx.trigger, "summarized", ctx.tokens, 0))


@dataclass
class Bill:
    """Dollars by bucket, compactions by layer, overflows, calls."""
    buckets: dict[str, float] = field(default_factory=lambda: dict.fromkeys(
        ("input", "cache_write_5m", "cache_write_1h", "cache_read", "output"), 0.0))
    layers: dict[str, int] = field(default_factory=dict)
    overflows: int = 0
    calls: int = 0

    def add(self, usage: dict[str, int]) -> None:
        for k, n in usage.items():
            self.buckets[k] += RATES.get(k) * n

    @property
    def input_usd(self) -> float:
        return sum(v for k, v in self.buckets.items() if k != "output")


class Pricer:
    """Prices requests with one prefix cache; block keys are content digests."""

    def __init__(self, bill: Bill, ttl: str) -> None:
        self.bill, self.ttl = bill, ttl
        self.cache = PrefixCache()
        self.keys: dict[str, str] = {}

    def blocks(self, request: list[dict]) -> list[Block]:
        out = [Block("system+tools", OVERHEAD)]
        for m in request:
            for b in m["content"]:
                raw = json.dumps(b, sort_keys=True)
                k = self.keys.get(raw)
                if k is None:
                    k = self.keys[raw] = hashlib.blake2b(f"{m['role']}{raw}".encode(), digest_size=12).hexdigest()
                out.append(Block(k, estimate_block(b)))
        return mark_last(out, 0)

    def __call__(self, request: list[dict], now: float, output: int):
        u = self.cache.request(self.blocks(request), now=now, ttl=self.ttl)
        self.bill.add(u.buckets(output))
        return u


def next_answer(rnd: random.Random, n: int, t: float, last: bool) -> tuple[Entry, list[Entry]]:
    """The model's answer to call n and the tool result that follows it (none for a final answer)."""
    if last:
        text = "Done: " + "summary of the change " * rnd.randint(5, 30)
        return Entry({"role": "assistant", "content": [{"type": "text", "text": text}]},
                     response_id=f"m{n}", timestamp=t), []
    name = TOOLS[rnd.randrange(len(TOOLS))]
    a = Entry({"role": "assistant", "content": [
        {"type": "text", "text": f"Step {n}."},
        {"type": "tool_use", "id": f"t{n}", "name": name, "input": {"path": f"src/m{rnd.randrange(300)}.py"}}]},
        response_id=f"m{n}", timestamp=t)
    size = int(rnd.choice((200, 800, 2_000, 4_000, 8_000)) * rnd.uniform(0.7, 1.3))
    return a, [Entry({"role": "user", "content": [tool_result_block(f"t{n}", f"{name}: " + "r" * size)]},
                     timestamp=t + 1)]


async def run(window: int, calls: int, policy: dict, seed: int = 7) -> Bill:
    rnd = random.Random(seed)
    cfg = PipelineConfig(budget=ContextBudget(window, 32_000), overhead_tokens=OVERHEAD, **policy)
    bill = Bill()
    price = Pricer(bill, cfg.cache_ttl)
    with tempfile.TemporaryDirectory() as d:
        pipe = Pipeline(cfg, session_dir=Path(d), stages=[StandInSummary(price)])
        t = 1_700_000_000.0
        history: list[Entry] = []
        prompts = rounds_left = 0
        pending: list[Entry] = []
        while bill.calls < calls:
            if not pending:   # the user's next prompt
                prompts += 1
                t += 600.0 if prompts % 5 == 0 else rnd.uniform(30, 120)
                pending = [Entry({"role": "user", "content": [{"type": "text", "text": f"Task {prompts}: "
                                  + "do the next thing " * rnd.randint(5, 60)}]}, timestamp=t)]
                rounds_left = rnd.randint(3, 10)
            history.extend(pending)
            res = await pipe.run(history, now=t)
            history = res.entries
            for r in res.reports:
                bill.layers[r.layer] = bill.layers.get(r.layer, 0) + 1
            if res.tokens >= cfg.budget.blocking_limit:
                bill.overflows += 1
            bill.calls += 1
            rounds_left -= 1
            a, pending = next_answer(rnd, bill.calls, t + 10, rounds_left <= 0)
            u = price(res.request, t, a.tokens)
            usage = {"input_tokens": u.input, "cache_creation_input_tokens": u.cache_write,
                     "cache_read_input_tokens": u.cache_read, "output_tokens": a.tokens}
            history.append(Entry(a.message, uuid=a.uuid, response_id=a.response_id, timestamp=a.timestamp,
                                 usage=usage))
            t += 15.0
    return bill


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=400)
    ap.add_argument("--windows", default="200000,60000,20000")
    args = ap.parse_args()
    print(f"{args.calls} calls per run; input dollars priced by the prefix-cache model (5m TTL, $3/M input)\n")
    print(f"{'window':>8} {'policy':>13} {'input $':>9} {'vs token-only':>14} {'vs summary':>11} {'read $':>8} "
          f"{'write $':>8} {'total $':>8} {'overflows':>9}  compactions")
    for w in (int(x) for x in args.windows.split(",")):
        bills = {name: asyncio.run(run(w, args.calls, pol)) for name, pol in POLICIES.items()}
        base, summ = bills["token-only"].input_usd, bills["summary-only"].input_usd
        for name, b in bills.items():
            acted = ", ".join(f"{k}×{v}" for k, v in sorted(b.layers.items())) or "-"
            print(f"{w:>8,} {name:>13} {b.input_usd:>9.2f} {b.input_usd / base:>13.2f}× {b.input_usd / summ:>10.2f}× "
                  f"{b.buckets['cache_read']:>8.2f} {b.buckets['cache_write_5m']:>8.2f} "
                  f"{b.input_usd + b.buckets['output']:>8.2f} {b.overflows:>9}  {acted}")
        print()


if __name__ == "__main__":
    main()
