"""`ctxtui replay` on the shared real Claude Code sessions and a generated long session, at windows
of 200,000 and 60,000: dollars of ctxtui ÷ dollars of cc, overflows and references kept per
policy, the user's messages still verbatim in the last request, and each policy's wall time
against `none`'s in the same run (the baseline: a walk that only prices). The goal (issue 13):
ctxtui ≤ 0.5× cc at zero overflows, references kept no worse.

Then the scale (issue 23): generated Claude Code logs of the given sizes (default 25 and 250 MB,
agent_core/replay/synthetic_log.py), each replayed by `ctxtui replay LOG --json` in a fresh
process: wall and CPU seconds, peak RSS, seconds per MB, and the per-MB time of the biggest log
÷ that of the smallest (1.0 is linear). The baseline, in the same run on the same files: a
process that only reads the log and json-decodes every line (what no replay can do without).

Usage: .venv/bin/python bench/replay.py [--requests 600] [--sizes 25,250] [--no-policies] [--keep DIR]
Prints the figures; nothing is asserted. The real sessions are skipped when absent; `--sizes ""`
skips the scale part.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
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
from agent_core.replay.synthetic_log import write_claude_code_log  # noqa: E402

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


# A fresh process runs the command; its only child, so RUSAGE_CHILDREN is the command's alone.
MEASURE = textwrap.dedent("""
    import json, resource, subprocess, sys, time
    t0 = time.monotonic()
    code = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL)
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(json.dumps({"code": code, "wall": time.monotonic() - t0, "cpu": ru.ru_utime + ru.ru_stime,
                      "rss_mb": ru.ru_maxrss / 1024}))
""")
READ_ONLY = textwrap.dedent("""
    import json, sys
    n = 0
    with open(sys.argv[1], "rb") as f:
        for line in f:
            json.loads(line)
            n += 1
""")


def measure(*command: str) -> dict:
    res = subprocess.run([sys.executable, "-c", MEASURE, *command], cwd=ROOT, capture_output=True, text=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def scale(sizes: list[float], keep: Path | None) -> None:
    print(f"\n{'log':>8} {'requests':>9}  {'replay wall':>11} {'cpu':>7} {'peak RSS':>9} {'s/MB':>6}  "
          f"{'read+json cpu':>13} {'RSS':>7}  {'replay ÷ read, cpu':>18}")
    per_mb = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        for mb in sizes:
            log = folder / f"generated-{mb:g}mb.jsonl"
            stats = write_claude_code_log(log, megabytes=mb)
            size = stats.bytes / 1e6
            base = measure(sys.executable, "-c", READ_ONLY, str(log))
            got = measure(sys.executable, "-m", "app.cli.main", "replay", str(log), "--json")
            if got["code"] != 0:
                print(f"{size:>6.0f}MB: ctxtui replay exited {got['code']}")
                continue
            per_mb.append((size, got["cpu"] / size))
            print(f"{size:>6.0f}MB {stats.requests:>9,}  {got['wall']:>10.1f}s {got['cpu']:>6.1f}s "
                  f"{got['rss_mb']:>7.0f}MB {got['cpu'] / size:>6.3f}  {base['cpu']:>12.1f}s "
                  f"{base['rss_mb']:>5.0f}MB  {got['cpu'] / max(base['cpu'], 1e-6):>17.1f}x")
    if len(per_mb) > 1:
        (a, ta), (b, tb) = per_mb[0], per_mb[-1]
        print(f"linearity: CPU seconds per MB at {b:.0f} MB ÷ at {a:.0f} MB = {tb / ta:.2f} (1.00 is linear; "
              f"wall time on a shared machine also measures the others)")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=600, help="requests in the generated session")
    ap.add_argument("--sizes", default="25,250", help="MB of the generated logs for the scale part ('' skips it)")
    ap.add_argument("--no-policies", action="store_true", help="only the scale part")
    ap.add_argument("--keep", type=Path, help="write the generated logs here and keep them")
    args = ap.parse_args()
    sizes = [float(x) for x in args.sizes.split(",") if x.strip()]
    if not args.no_policies:
        policies(args.requests)
    if sizes:
        scale(sizes, args.keep)
    return 0


def policies(requests: int) -> None:
    pricer = Pricer()
    print(f"{'session':<26}{'window':>8}{'reqs':>6}  {'ctxtui/cc':>9}  "
          f"{'over none/cc/ctxtui':>20}  {'refs none/cc/ctxtui':>22}  {'time cc/ctxtui ÷ none':>22}")
    for label, traj in trajectories(requests):
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


if __name__ == "__main__":
    sys.exit(main())
