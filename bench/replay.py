"""`ctxtui replay` on the shared real Claude Code sessions and a generated long session, at windows
of 200,000 and 60,000: dollars of ctxtui ÷ dollars of cc, overflows and references kept per
policy, the user's messages still verbatim in the last request, and each policy's wall time
against `none`'s in the same run (the baseline: a walk that only prices). The goal (issue 13):
ctxtui ≤ 0.5× cc at zero overflows, references kept no worse.

Usage: .venv/bin/python bench/replay.py [--requests 600]
Prints the figures; nothing is asserted. The real sessions are skipped when absent.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent_core.logs.trajectory_read import read_trajectories  # noqa: E402
from agent_core.pricing.pricer import Pricer  # noqa: E402
from agent_core.replay.options import make_options  # noqa: E402
from agent_core.replay.references import ReferenceIndex  # noqa: E402
from agent_core.replay.runner import make_policy  # noqa: E402
from agent_core.replay.simulate import simulate  # noqa: E402
from agent_core.replay.summary_size import summary_size  # noqa: E402
from agent_core.replay.synthetic import generate  # noqa: E402

REAL = ROOT.parent / "shared" / "reference" / "real-cc-sessions" / "projects" / "-home-dev-spotter"
WINDOWS = (200_000, 60_000)


def trajectories(requests: int):
    out = []
    if REAL.is_dir():
        for log in sorted(REAL.glob("*.jsonl")):
            out += [(f"{log.name[:12]}" + (f"[{t.agent_id[:7]}]" if t.agent_id else ""), t)
                    for t in read_trajectories(log) if len(t.requests) >= 10]
    else:
        print(f"(shared real sessions not found at {REAL}: skipped)")
    out.append((f"synthetic-{requests}", generate(requests, seed=11, long_pause_every=12)))
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=600, help="requests in the generated session")
    args = ap.parse_args()
    pricer = Pricer()
    print(f"{'session':<26}{'window':>8}{'reqs':>6}  {'ctxtui/cc':>9}  "
          f"{'over none/cc/ctxtui':>20}  {'refs none/cc/ctxtui':>22}  {'time cc/ctxtui ÷ none':>22}")
    for label, traj in trajectories(args.requests):
        for window in WINDOWS:
            options = make_options([str(ROOT)], window=window)
            size = summary_size(traj, window)
            refs = ReferenceIndex(traj)
            runs, times = {}, {}
            for spec in options.policies:
                t0 = time.perf_counter()
                policy, w = make_policy(spec, traj, window=window, ttl=options.ttl, size=size, pricer=pricer)
                runs[spec.name] = simulate(traj, policy, window=w, pricer=pricer, refs=refs)
                times[spec.name] = time.perf_counter() - t0
            none, cc, ct = runs["none"], runs["cc"], runs["ctxtui"]
            ratio = ct.cost_usd / cc.cost_usd if cc.cost_usd else float("nan")
            total = none.references_total or 1
            base = max(times["none"], 1e-6)
            over = f"{none.overflows}/{cc.overflows}/{ct.overflows}"
            kept = f"{none.references_kept}/{cc.references_kept}/{ct.references_kept} of {total}"
            speed = f"{times['cc'] / base:.1f}x/{times['ctxtui'] / base:.1f}x ({base:.2f}s)"
            print(f"{label[:25]:<26}{window:>8,}{len(traj.requests):>6}  {ratio:>9.2f}  {over:>20}  {kept:>22}  "
                  f"{speed:>22}")
            print(f"{'':<40}$ none {none.cost_usd:.2f}  cc {cc.cost_usd:.2f}  ctxtui {ct.cost_usd:.2f}; "
                  f"user messages verbatim cc {cc.user_messages_kept} ctxtui {ct.user_messages_kept} of "
                  f"{ct.user_messages_total}; cc {dict(cc.compactions)} ctxtui {dict(ct.compactions)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
