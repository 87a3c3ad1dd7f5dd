"""The closed loop of issue 25: what each compaction variant costs in dollars and in re-work, when
the agent later needs what it read.

The real agent (the loop, the engine, read_file, the real SDK) runs against the loopback fake
server; a scripted model (tests/closed_loop_agent.py) reads 24 files of 5–20 KB, each with a fact on
its first line, and is asked 16 times for the fact of a file it read 2–12 prompts before. It answers
from the request when the fact is there verbatim, re-reads the file when it is not, and says
"lost" when it cannot (the re-read found nothing, or the question was never sent: the blocking
limit). Summary requests get a summary that keeps the user's prompts and the file paths but not
the contents, as a real model's does (`--summary-facts`: one that also copies every fact).

For each variant at each window it prints the session's dollars (the loop's own cost book: the
usage each response reported, the fake server's prefix-cache model, priced with genai-prices'
claude-sonnet-4-6 rates), that figure ÷ the baseline variant's at the same window in this run,
requests answered (summaries included; refused ones apart), re-reads, answers from the context,
facts lost, user prompts still verbatim in the last request, and which layers acted.

Variants are config overrides for load_config (`--policy` presets and the engine's switches):
ctxtui = the default engine, no-autocompact = auto-compact off (the fallback layers: collapse,
snip), cc / summary / none = compaction/presets.py's presets.

Usage: .venv/bin/python bench/closed_loop.py [--windows 20000,60000,200000]
       [--variants ctxtui,no-autocompact,cc,summary,none] [--baseline cc] [--files 24] [--questions 16]
       [--seed 0] [--min-gap 2] [--max-gap 12] [--summary-facts]
About 1 minute on 2 cores (15 sessions of 40 prompts, 3–5 s each). Nothing is asserted.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.closed_loop_agent import VARIANTS, Figures, SummaryStyle, run_session  # noqa: E402


def isolate(root: Path) -> None:
    """State, config and home folders of this process under `root`: a bench never writes the
    user's (run_session passes its own environment to the config as well)."""
    for var, sub in (("HOME", "home"), ("CTXTUI_HOME", "state/ctxtui"), ("XDG_STATE_HOME", "state"),
                     ("XDG_CONFIG_HOME", "config")):
        os.environ[var] = str(root / sub)
    os.environ.pop("CTXTUI_CONFIG", None)


def row(f: Figures, base: float | None) -> str:
    ratio = f"{f.dollars / base:.2f}×" if base else "-"
    acted = ", ".join(f"{k}×{v}" for k, v in sorted(f.compactions.items())) or "-"
    said = ", ".join(f"{k}×{v}" for k, v in sorted(f.error_kinds.items()))
    refused = f" ({f.refused} refused)" if f.refused else ""
    return (f"{f.variant:<15} {f.window:>8,} {f.dollars:>8.3f} {ratio:>7} {f.requests:>5}{refused:<14} "
            f"{f.rereads:>8} {f.answered:>8} {f.lost:>5} {f.prompts_kept:>4}/{f.prompts:<3} "
            f"{f.seconds:>5.1f}s  {acted}{'; errors: ' + said if said else ''}")


async def measure(args: argparse.Namespace, names: list[str], windows: list[int], root: Path) -> None:
    style = SummaryStyle(facts=args.summary_facts)
    print(f"{args.files} files, {args.questions} questions {args.min_gap}–{args.max_gap} prompts after the read, "
          f"seed {args.seed}; dollars ÷ {args.baseline} at the same window\n")
    print(f"{'variant':<15} {'window':>8} {'dollars':>8} {'ratio':>7} {'requests':<19} {'re-reads':>8} "
          f"{'context':>8} {'lost':>5} {'prompts':>8} {'time':>6}  compactions")
    for w in windows:
        got: dict[str, Figures] = {}
        for name in names:
            run = await run_session(root / f"{name}-{w}", window=w, settings=VARIANTS[name], variant=name,
                                    files=args.files, questions=args.questions, seed=args.seed, summary=style,
                                    min_gap=args.min_gap, max_gap=args.max_gap)
            got[name] = run.figures
        base = got[args.baseline].dollars if args.baseline in got else None
        for name in names:
            print(row(got[name], base), flush=True)
        print()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--windows", default="20000,60000,200000")
    ap.add_argument("--variants", default=",".join(VARIANTS), help=f"from {', '.join(VARIANTS)}")
    ap.add_argument("--baseline", default="cc", help="the variant the dollars are divided by")
    ap.add_argument("--files", type=int, default=24)
    ap.add_argument("--questions", type=int, default=16)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--min-gap", type=int, default=2, help="a question comes at least this many prompts after the read")
    ap.add_argument("--max-gap", type=int, default=12, help="... and at most this many")
    ap.add_argument("--summary-facts", action="store_true", help="summaries copy every fact they can see")
    args = ap.parse_args()
    names = [n.strip() for n in args.variants.split(",") if n.strip()]
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        ap.error(f"unknown variant(s) {', '.join(unknown)}; use {', '.join(VARIANTS)}")
    if args.baseline not in names:
        names.append(args.baseline)
    windows = [int(x) for x in args.windows.split(",") if x.strip()]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="ctxtui-closed-loop-") as d:
        isolate(Path(d) / "user")
        asyncio.run(measure(args, names, windows, Path(d)))
    print(f"{len(names) * len(windows)} sessions in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
