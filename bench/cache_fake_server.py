"""Issue 13's headline run: the 20-instruction session of issue 12 through the real loop and the
fake Messages API server, every request it received priced by the prefix-cache model
(compaction/accounting/cache_model.py; breakpoints where the request put them, calls 15 s apart, so the
cache stays warm), under three pipelines: `cache-aware` (the defaults), `token-only`
(`cache_aware=False`) and `summary-only` (snip, microcompact and collapse off).

Input dollars are priced at $3/M input ($3.75 5m write, $0.30 read); summary calls included.
Usage: `.venv/bin/python bench/cache_fake_server.py [--windows 20000,60000]`.
"""
from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent_core import events as ev  # noqa: E402
from compaction.accounting.cache_model import Block, PrefixCache, Rates  # noqa: E402
from tests.agent_core.loop.instruction_helpers import INSTRUCTIONS, instruction_session  # noqa: E402
from tests.agent_helpers import collect, fake_agent, make_workspace, of  # noqa: E402
from tests.fake_anthropic import FakeAnthropic, is_summary_request  # noqa: E402
from tests.fake_anthropic.usage import segments  # noqa: E402

RATES = Rates.from_input(3.0, 15.0)
POLICIES = {
    "cache-aware": {},
    "token-only": {"cache_aware": False},
    "summary-only": {"snip_enabled": False, "microcompact_enabled": False, "collapse_enabled": False},
}


def price(bodies: list[dict]) -> tuple[float, float]:
    """(input dollars, share of input tokens read from the cache) of these requests in order."""
    cache = PrefixCache(min_cacheable=0)
    usd = read = total = 0.0
    for i, body in enumerate(bodies):
        blocks = [Block(s.key, s.tokens, s.ttl is not None) for s in segments(body)]
        u = cache.request(blocks, now=15.0 * i)
        usd += RATES.price(u.buckets())
        read += u.cache_read
        total += u.total
    return usd, read / max(1, total)


async def run(window: int, policy: dict) -> tuple[float, float, int, int, dict[str, int]]:
    with tempfile.TemporaryDirectory() as d:
        ws = make_workspace(Path(d))
        with FakeAnthropic(responder=instruction_session(ws, window)) as fake:
            agent = fake_agent(ws, fake.base_url, context_window=window)
            for k, v in policy.items():
                setattr(agent.pipeline.config, k, v)
            layers: dict[str, int] = {}
            for text in INSTRUCTIONS:
                events = await collect(agent.run(text))
                for c in of(events, ev.Compaction):
                    layers[c.layer] = layers.get(c.layer, 0) + 1
            await agent.aclose()
            bodies = fake.message_requests
    usd, hit = price(bodies)
    summaries = sum(1 for b in bodies if is_summary_request(b))
    return usd, hit, len(bodies), summaries, layers


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--windows", default="20000,60000")
    args = ap.parse_args()
    print(f"{'window':>8} {'policy':>13} {'input $':>8} {'vs summary-only':>16} {'hit rate':>9} {'requests':>9}  "
          "compactions")
    for w in (int(x) for x in args.windows.split(",")):
        got = {name: asyncio.run(run(w, pol)) for name, pol in POLICIES.items()}
        base = got["summary-only"][0]
        for name, (usd, hit, n, _summaries, layers) in got.items():
            acted = ", ".join(f"{k}×{v}" for k, v in sorted(layers.items())) or "-"
            print(f"{w:>8,} {name:>13} {usd:>8.2f} {usd / base:>15.2f}× {hit:>8.0%} {n:>9}  {acted}")
        print()


if __name__ == "__main__":
    main()
