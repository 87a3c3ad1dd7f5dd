"""A thousand-turn session against a ten-turn one (issue 23): every figure beside its baseline from
the same run.

1. Headless: the demo model through the real loop for --turns prompts in one process (every tool
   allowed, tests/demo_project.py's fixed project). CPU per turn (`time.process_time`, the median of
   the ten turns ending at turn 10, of the fifty ending at each later mark) and RSS (VmRSS) at
   turns 10, 50, 100, 500 and 1,000, each against turn 10; goal: turn 1,000 within 1.2x of turn 10.
   Then the log: its bytes against the bytes of the entries it holds (goal: at most 3x).
2. The other measures of the issue, each its own bench run as a child (their figures and ratios
   are printed as they print them):
   - bench/session_log.py: log bytes by record type, resume against fresh (goal 1.5x time, 2x memory);
   - bench/tui.py --append-only: appending at 5,000 messages against a bare Textual app;
   - bench/tui.py --turns: the TUI over the same number of turns against turn 50 and against the
     same turn headless (run in a child process in step with the TUI's, turn by turn);
   - bench/startup.py: first event and first paint against `import textual` and a minimal app;
   - bench/replay.py --sizes 250 --no-policies: replay on a 250 MB log, against reading it.
   --quick runs 100 turns and smaller children (a few minutes); --only-headless skips part 2.

Usage: .venv/bin/python bench/soak.py [--turns 1000] [--quick] [--only-headless]
Prints figures and ratios; asserts nothing.
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent_core.config import load_config  # noqa: E402
from agent_core.loop.factory import build_agent  # noqa: E402
from tests.demo_project import fixed_place  # noqa: E402

PROMPTS = ["explore this repository", "how does compaction work?", "read every file in compaction/",
           "what does the agent loop do?", "explain the tools and the sandbox", "how are costs computed?",
           "describe the TUI widgets", "how are sessions saved and resumed?", "what do the tests cover?"]
MARKS = (10, 50, 100, 500, 1000)


def rss_mib() -> float:
    with open("/proc/self/status") as f:
        return int(next(x.split()[1] for x in f if x.startswith("VmRSS:"))) / 1024


def entry_bytes(path: Path) -> tuple[int, int]:
    """(the log's bytes, the bytes of its entry and history records)."""
    total = held = 0
    with open(path, "rb") as f:
        for line in f:
            total += len(line)
            if line.startswith((b'{"t":"entry"', b'{"t":"history"', b'{"t": "entry"', b'{"t": "history"')):
                held += len(line)
    return total, held


async def headless(turns: int) -> None:
    with fixed_place() as (ws, env):
        await _headless(ws, env, turns)


async def _headless(ws: Path, env: dict, turns: int) -> None:
    config = load_config({"model": "demo", "allow": ["all"]}, environ=env, workspace=ws)
    agent = build_agent(config, interactive=False)
    cpu: list[float] = []
    rss: dict[int, float] = {}
    for i in range(1, turns + 1):
        t0 = time.process_time()
        async for _ in agent.run(f"{PROMPTS[i % len(PROMPTS)]} (#{i})"):
            pass
        cpu.append(time.process_time() - t0)
        if i in MARKS:
            rss[i] = rss_mib()
        if i % 100 == 0:
            print(f"  … turn {i:,} of {turns:,}", file=sys.stderr, flush=True)
    await agent.aclose()

    def at(n: int) -> float:
        """The median turn of the ten ending at turn 10, then of the fifty ending at the mark: a
        compaction makes a turn several times dearer, and fifty turns hold a steady share of them."""
        width = 10 if n <= 10 else 50
        return statistics.median(cpu[max(0, n - width):n]) * 1000

    marks = [m for m in MARKS if m <= turns]
    base_cpu, base_rss = at(marks[0]), rss[marks[0]]
    print(f"1. headless, {turns:,} demo turns in one process ({len(agent.entries):,} entries held at the end)")
    print(f"   {'turn':>6}  {'CPU ms/turn':>11}  {'vs turn 10':>10}  {'RSS MiB':>8}  {'vs turn 10':>10}")
    for m in marks:
        print(f"   {m:>6,}  {at(m):>11.1f}  {at(m) / base_cpu:>9.2f}x  {rss[m]:>8.0f}  {rss[m] / base_rss:>9.2f}x")
    print(f"   goal: CPU per turn at the last mark within 1.2x of turn 10 -> {at(marks[-1]) / base_cpu:.2f}x")
    total, held = entry_bytes(agent.session.path)
    print(f"   the log: {total / 1e6:.2f} MB for {held / 1e6:.2f} MB of entry and history records: "
          f"{total / max(1, held):.2f}x (goal at most 3x)\n")


def child(title: str, args: list[str]) -> None:
    print(f"== {title}: {' '.join(args)}", flush=True)
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, *args], cwd=ROOT, text=True, capture_output=True)
    print(r.stdout.rstrip())
    if r.returncode != 0:
        print(f"   (exit {r.returncode}: {r.stderr.strip()[-400:]})")
    print(f"   ({time.perf_counter() - t0:.0f} s)\n", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=1000)
    ap.add_argument("--quick", action="store_true", help="100 turns and smaller children")
    ap.add_argument("--only-headless", action="store_true")
    a = ap.parse_args()
    turns = 100 if a.quick else a.turns
    asyncio.run(headless(turns))
    if a.only_headless:
        return
    runs = "2" if a.quick else "5"
    child("2a. the session log and resume", ["bench/session_log.py", "--turns", str(turns), "--runs", runs])
    child("2b. appending to a long conversation", ["bench/tui.py", "--append-only"])
    child("2c. the TUI over many turns", ["bench/tui.py", "--turns", str(turns)])
    child("2d. start-up", ["bench/startup.py", "--runs", "3" if a.quick else "9"])
    child("2e. replay at scale", ["bench/replay.py", "--sizes", "25" if a.quick else "250", "--no-policies"])


if __name__ == "__main__":
    main()
