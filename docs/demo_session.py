"""Run the demo's tour (agent_core/providers/demo/tour.py) through the real loop, offline, over this
repository at the demo's default window, and print the state after each step and the compactions
it showed, as a Markdown table (the README's tour quotes it).

    .venv/bin/python docs/demo_session.py               # the default engine
    .venv/bin/python docs/demo_session.py --check       # ... and exit 1 if a promise of the tour failed
    .venv/bin/python docs/demo_session.py --fallbacks   # summarizing off: snip and collapse step in

The files git tracks are copied to a folder whose path always has the same length
(tests/demo_project.py), with ctxtui's state beside them, so the figures are the same on every
machine for one commit; the commands the demo runs are allowed, as a user would allow them.
Nothing leaves the machine.
"""
from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from agent_core.config import load_config  # noqa: E402 - the repository's code, wherever this is run from
from agent_core.loop.factory import build_agent  # noqa: E402
from agent_core.providers.demo.tour import FALLBACK_ENV, Step, promises, walk  # noqa: E402
from tests.demo_project import copy_checkout, fixed_root, state_env  # noqa: E402

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


async def main(fallbacks: bool, check: bool) -> int:
    with fixed_root() as root:
        env = {**state_env(root), **(FALLBACK_ENV if fallbacks else {})}
        config = load_config({"model": "demo", "allow": ["all"]}, environ=env, workspace=copy_checkout(ROOT, root))
        agent = build_agent(config, interactive=False)
        print("| # | prompt | states during the step | after | compactions (trigger, cache verdict) tokens |")
        print("|---|---|---|---|---|")
        steps: list[Step] = []
        async for step in walk(agent):
            steps.append(step)
            print(row(len(steps), step), flush=True)
        cost = agent.cost_event()
        await agent.aclose()
    print(f"\nsession cost ${cost.total_usd:.4f} (claude-sonnet-4-6 prices), cache hit rate "
          f"{cost.cache_hit_rate:.0%}")
    broken = promises(steps, agent.pipeline.config.budget)
    if check and not fallbacks:
        retune = "promises not kept (retune TOUR in agent_core/providers/demo/tour.py):\n- "
        print("\n" + ("every promise of the tour kept" if not broken else retune + "\n- ".join(broken)))
        return 1 if broken else 0
    return 1 if any(s.errors for s in steps) else 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    env = " ".join(f"{k}={v}" for k, v in FALLBACK_ENV.items())
    ap.add_argument("--fallbacks", action="store_true", help=f"start with {env}: snip and collapse step in")
    ap.add_argument("--check", action="store_true", help="exit 1 when a promise of the tour is not kept")
    args = ap.parse_args()
    sys.exit(asyncio.run(main(args.fallbacks, args.check)))
