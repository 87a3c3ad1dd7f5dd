"""How long one `ctxtui statusline` call takes, run as Claude Code runs it (a new process each time).

Builds a synthetic ~50 MB Claude Code session log (bench/usage.py's generator: prompts, tool
results, one record per content block, sub-agent records, compactions, corrupt lines, a cut-off
last line) in a temp projects folder, then times the command, each run a fresh subprocess with
Claude Code's status JSON on stdin:

  first       no saved state: the whole log is read (median of --first runs, state removed before each)
  cached      state saved, nothing appended since (median of --calls runs)
  appended    state saved, one response appended before each call (median of --calls runs)
  python      `python -c pass` and `python -S -c pass` (no site), the floor any Python command pays

Bytecode is cached (in the temp folder) as an installed ctxtui has it; --no-pyc keeps the
environment's PYTHONDONTWRITEBYTECODE, which compiles every module on every call (~100 ms more).

Usage: .venv/bin/python bench/statusline.py [--mb 50] [--calls 20] [--first 3] [--keep]
Prints medians in ms against the floor measured in the same run; the targets (issue 26): a warm call
(cached or appended) within 40 ms, the first call within 300 ms. Nothing is asserted.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from usage import MODELS, _cc_record, build_log  # noqa: E402

CTXTUI = Path(sys.executable).parent / "ctxtui"


def _run(cmd: list[str], stdin: str, env: dict) -> tuple[float, str]:
    t = time.perf_counter()
    r = subprocess.run(cmd, input=stdin, capture_output=True, text=True, env=env, timeout=600)
    dt = time.perf_counter() - t
    if r.returncode != 0 or r.stderr:
        raise SystemExit(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()}")
    return dt, r.stdout.strip()


def _ms(xs: list[float]) -> str:
    return f"{statistics.median(xs) * 1000:7.1f} ms (min {min(xs) * 1000:.1f}, max {max(xs) * 1000:.1f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=50)
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--first", type=int, default=3)
    ap.add_argument("--keep", action="store_true", help="keep the temp folder")
    ap.add_argument("--no-pyc", action="store_true",
                    help="as the environment says about bytecode (PYTHONDONTWRITEBYTECODE=1 compiles every module "
                         "on every call); by default bytecode is cached in the temp folder, as an install has it")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="ctxtui-statusline-bench-"))
    try:
        log = tmp / "claude" / "projects" / "-home-me-proj" / "5f1e2d3c-0000-4000-8000-bench0000001.jsonl"
        log.parent.mkdir(parents=True)
        stats = build_log(log, int(args.mb * 1e6))
        env = {**os.environ, "CTXTUI_HOME": str(tmp / "home")}
        if not args.no_pyc:      # an installed ctxtui has its bytecode cached: do as it does (in the temp folder)
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
        stdin = json.dumps({"session_id": log.stem, "transcript_path": str(log), "cwd": "/home/me/proj",
                            "model": {"id": MODELS[0], "display_name": "Sonnet 4.5"},
                            "workspace": {"current_dir": "/home/me/proj", "project_dir": "/home/me/proj"},
                            "cost": {"total_cost_usd": 1.0}})
        cmd = [str(CTXTUI), "statusline"]
        print(f"log: {stats['bytes'] / 1e6:.1f} MB, {stats['lines']:,} lines, {stats['responses']:,} responses")
        python = [_run([sys.executable, "-c", "pass"], "", env)[0] for _ in range(args.calls)]
        bare = [_run([sys.executable, "-S", "-c", "pass"], "", env)[0] for _ in range(args.calls)]
        _run(cmd, stdin, env)              # writes the bytecode cache (unless --no-pyc)
        first = []
        for _ in range(args.first):
            shutil.rmtree(tmp / "home", ignore_errors=True)
            dt, line = _run(cmd, stdin, env)
            first.append(dt)
        cached = [_run(cmd, stdin, env)[0] for _ in range(args.calls)]
        appended = []
        with open(log, "a", encoding="utf-8") as f:
            f.write("\n")                 # end the generator's cut-off last line
        _run(cmd, stdin, env)
        for i in range(args.calls):
            with open(log, "a", encoding="utf-8") as f:
                f.write(_cc_record(i, 30_000 + i))
            appended.append(_run(cmd, stdin, env)[0])
        print(f"line: {line}")
        floor = statistics.median(bare)
        print(f"python -c pass    {_ms(python)}")
        print(f"python -S -c pass {_ms(bare)}")
        print(f"first call        {_ms(first)}   ({args.first} runs, whole log read; target < 300 ms), "
              f"{statistics.median(first) / floor:.1f}x the floor")
        print(f"cached call       {_ms(cached)}   ({args.calls} runs, nothing appended; target < 40 ms), "
              f"{statistics.median(cached) / floor:.1f}x the floor")
        print(f"appended call     {_ms(appended)}   ({args.calls} runs, one response appended before each; "
              f"target < 40 ms), {statistics.median(appended) / floor:.1f}x the floor")
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
