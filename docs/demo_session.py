"""Run the demo's tour (agent_core/providers/demo/tour.py) through the real loop, offline, over this
repository at the demo's default window, and print the state after each step and the compactions
it showed, as a Markdown table (the README's walk-through and the issue notes quote it).

    .venv/bin/python docs/demo_session.py               # the default engine
    .venv/bin/python docs/demo_session.py --fallbacks   # summarizing off: snip and collapse step in

Everything runs in a temporary home folder; nothing leaves the machine.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from agent_core.config import load_config  # noqa: E402 - the repository's code, wherever this is run from
from agent_core.loop.factory import build_agent  # noqa: E402
from agent_core.providers.demo.tour import FALLBACK_ENV, Step, walk  # noqa: E402

SHORT = {"tool_result_budget": "results", "session_memory": "memory", "microcompact": "micro",
         "autocompact": "summary", "collapse": "collapse", "snip": "snip"}


def _why(c) -> str:
    """The cache verdict that let a layer act; none when it acted because it had to (at the
    threshold, or snip as the fallback)."""
    reason = (c.cache or {}).get("reason")
    return f", {reason}" if reason and reason != "waits" else ""


def row(i: int, s: Step) -> str:
    if s.said:
        cache = "cache cold" if "has expired" in s.said else "cache still warm"
        return f"| {i} | `{s.prompt}` | {s.said.split('.')[0]}; {cache} | {s.tokens:,} / {s.window:,} {s.state} | |"
    comps = "; ".join(f"{SHORT.get(c.layer, c.layer)} ({c.trigger}{_why(c)}) {c.tokens_before:,}→{c.tokens_after:,}"
                      for c in s.compactions)
    return (f"| {i} | {s.prompt} | {' → '.join(s.states)} | {s.tokens:,} / {s.window:,} {s.state} | "
            f"{comps or '—'} |")


async def main(fallbacks: bool) -> int:
    home = tempfile.mkdtemp(prefix="ctxtui-tour-")
    env = {"HOME": home, "CTXTUI_HOME": os.path.join(home, "state"), **(FALLBACK_ENV if fallbacks else {})}
    config = load_config({"model": "demo"}, environ=env, workspace=ROOT)
    agent = build_agent(config, interactive=False)
    print("| # | prompt | states during the step | after | compactions (trigger, cache verdict) tokens |")
    print("|---|---|---|---|---|")
    bad = 0
    i = 0
    async for step in walk(agent):
        i += 1
        print(row(i, step), flush=True)
        bad += bool(step.errors) or (not step.said and step.stop_reason != "end_turn")
    cost = agent.cost_event()
    await agent.aclose()
    print(f"\nsession cost ${cost.total_usd:.4f} (claude-sonnet-4-6 prices), cache hit rate "
          f"{cost.cache_hit_rate:.0%}")
    return 1 if bad else 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    env = " ".join(f"{k}={v}" for k, v in FALLBACK_ENV.items())
    ap.add_argument("--fallbacks", action="store_true", help=f"start with {env}: snip and collapse step in")
    sys.exit(asyncio.run(main(ap.parse_args().fallbacks)))
