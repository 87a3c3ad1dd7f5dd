"""A long demo session's log against the entries it holds, and resuming it against starting fresh.

Drives the demo model through the real loop for --turns prompts in one process (as the tests do,
on tests/demo_project.py's fixed project, every tool allowed), then reports:
- the log's bytes against the bytes of its entry and history records (the entries it holds), by
  record type: the state (`state` snapshots and `delta` changes) should be a small share, flat
  over the session (issue 23: format 1 wrote 593 MB for 1,000 turns, 93% state snapshots);
- resuming it against starting a fresh session, each in a subprocess (the best of --runs: CPU
  time from `os.wait4`, peak RSS from the child's own VmHWM): `build_agent` alone (the session opened and
  replayed, then closed), and `ctxtui --headless [--continue] -p PROMPT` (which adds a turn: on
  the long session one with a full context, often a compaction). The goal is at most 1.5x the
  time and 2x the memory;
- `load_session` alone on the log, in a subprocess, against importing the reader.
Usage: `.venv/bin/python bench/session_log.py [--turns 1000] [--runs 5]`. Prints figures; asserts nothing.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent_core.config import load_config  # noqa: E402
from agent_core.loop.factory import build_agent  # noqa: E402
from tests.demo_project import build, fixed_root, state_env  # noqa: E402

PROMPTS = ["explore this repository", "how does compaction work?", "what does the agent loop do?",
           "explain the tools and the sandbox", "how are costs computed?", "describe the TUI widgets",
           "how are sessions saved and resumed?", "what do the tests cover?"]


async def drive(ws: Path, env: dict, turns: int) -> tuple[Path, int, float]:
    """Run `turns` prompts; (the log, entries in the history at the end, seconds per turn)."""
    config = load_config({"model": "demo", "allow": ["all"]}, environ=env, workspace=ws)
    agent = build_agent(config, interactive=False)
    t0 = time.perf_counter()
    for i in range(turns):
        async for _ in agent.run(f"{PROMPTS[i % len(PROMPTS)]} (#{i})"):
            pass
    took = time.perf_counter() - t0
    await agent.aclose()
    return agent.session.path, len(agent.entries), took / max(1, turns)


def by_type(path: Path) -> Counter:
    out: Counter = Counter()
    with open(path, "rb") as f:
        for line in f:
            t = line[6:line.find(b'"', 6)].decode() if line.startswith(b'{"t":"') else "?"
            out[t] += len(line)
    return out


# Runs the code (argv[1]) with the rest as its argv, then says its peak RSS: the kernel's own
# ru_maxrss of a child forked from this (large) process starts at this process's size.
PEAK = """import sys
code, sys.argv = sys.argv[1], sys.argv[1:]
try:
    exec(compile(code, "<bench>", "exec"), {"__name__": "__main__"})
except SystemExit:
    pass
finally:
    with open("/proc/self/status") as f:
        print("peak_kib", next(x.split()[1] for x in f if x.startswith("VmHWM:")), file=sys.stderr)"""
HEADLESS = "import runpy; runpy.run_module('app.cli', run_name='__main__')"


def child(code: str, args: list[str], env: dict) -> tuple[float, float]:
    """(CPU seconds, peak RSS MiB) of running `code` with `args` in a fresh interpreter."""
    p = subprocess.Popen([sys.executable, "-c", PEAK, code, *args], env=env, cwd=ROOT, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = p.stderr.read().decode(errors="replace") if p.stderr else ""
    _, status, ru = os.wait4(p.pid, 0)
    peak = [int(x.split()[1]) for x in err.splitlines() if x.startswith("peak_kib ")]
    if os.waitstatus_to_exitcode(status) != 0 or not peak or "Traceback" in err:
        print(f"  (failed: {' '.join(args)}: {err.strip()[-300:]})")
    return ru.ru_utime + ru.ru_stime, (peak[-1] if peak else 0) / 1024


def best_of(runs: int, code: str, args_for, env: dict) -> tuple[float, float]:
    """The least CPU time and peak RSS of `runs` runs (a shared machine only ever adds to them)."""
    got = [child(code, args_for(i), env) for i in range(runs)]
    return min(c for c, _ in got), min(m for _, m in got)


# Open a session the way the front-ends do, then close it: argv = workspace, home, 1 to resume the latest.
OPEN = """import asyncio, sys
from agent_core.config import load_config
from agent_core.loop.factory import build_agent
config = load_config({"model": "demo", "allow": ["all"], "home": sys.argv[2]}, environ={}, workspace=sys.argv[1])
agent = build_agent(config, continue_=sys.argv[3] == "1")
asyncio.run(agent.aclose())"""


def report(what: str, fresh: tuple[float, float], resumed: tuple[float, float]) -> None:
    print(f"{what} (CPU s, peak RSS MiB): fresh {fresh[0]:.2f} s {fresh[1]:.0f} MiB; resuming the long session "
          f"{resumed[0]:.2f} s {resumed[1]:.0f} MiB")
    print(f"  resume ÷ fresh: time {resumed[0] / fresh[0]:.2f}× (goal ≤ 1.5×), memory "
          f"{resumed[1] / fresh[1]:.2f}× (goal ≤ 2×)\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    with fixed_root() as root:
        ws, env = build(root), state_env(root)
        log, live, per_turn = asyncio.run(drive(ws, env, args.turns))
        sizes = by_type(log)
        total, entries = sum(sizes.values()), sizes["entry"] + sizes["history"]
        print(f"{args.turns:,} demo turns: {per_turn * 1000:.0f} ms a turn; {live} entries in the history at the end\n")
        print(f"log {total:,} bytes; entry and history records {entries:,} bytes: log ÷ entries "
              f"{total / max(1, entries):.2f}× (goal ≤ 3×)")
        for t, n in sizes.most_common():
            print(f"  {t:>8} {n:>13,} bytes {100 * n / total:5.1f}%")
        state = sizes["state"] + sizes["delta"]
        print(f"  state and changes: {state / max(1, args.turns):,.0f} bytes a turn\n")

        base = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CTXTUI_"))}
        run_env = {**base, **env}
        opened = [str(ws)]
        child(OPEN, [*opened, str(root / "warm"), "0"], run_env)     # compiles what the runs import, once
        fresh = best_of(args.runs, OPEN, lambda i: [*opened, str(root / f"open{i}"), "0"], run_env)
        resumed = best_of(args.runs, OPEN, lambda i: [*opened, env["CTXTUI_HOME"], "1"], run_env)
        report(f"build_agent, best of {args.runs}", fresh, resumed)
        cli = ["--headless", "--model", "demo", "--allow", "all", "--workspace", str(ws)]
        fresh = best_of(args.runs, HEADLESS, lambda i: [*cli, "--home", str(root / f"fresh{i}"), "-p", "hello"],
                        run_env)
        # each resume adds one turn to the long session
        resumed = best_of(args.runs, HEADLESS, lambda i: [*cli, "--home", env["CTXTUI_HOME"], "--continue", "-p",
                                                          "hello"], run_env)
        report(f"headless -p, best of {args.runs}", fresh, resumed)

        code = "from agent_core.sessions.session_reader import load_session"
        only = best_of(args.runs, code, lambda i: [], run_env)
        load = best_of(args.runs, f"{code}; load_session({str(log)!r})", lambda i: [], run_env)
        print(f"load_session alone: {load[0]:.2f} s {load[1]:.0f} MiB; importing the reader {only[0]:.2f} s "
              f"{only[1]:.0f} MiB: reading the log {load[0] - only[0]:.2f} s, {load[1] - only[1]:.0f} MiB for a "
              f"{total / 2**20:.1f} MiB log")


if __name__ == "__main__":
    main()
