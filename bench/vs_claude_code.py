"""ctxtui against the real Claude Code, in one closed loop (issue 49).

Both clients run as their users run them — the command, `--input-format stream-json
--output-format stream-json`, one prompt at a time (each waits for its `result` line) — against the
project's loopback fake server, whose scripted model plays the same agent for both
(tests/closed_loop_peer.py states the rules, the summary's among them). Claude Code is the pinned
2.1.328 native binary, installed from npm into a cache folder when missing.

Per workload, window and client it prints: dollars from the server's own usage (genai-prices'
rates) and that ÷ Claude Code's at the same window (default, and with its proactive threshold),
requests (main / summary), compactions, recalls answered from the context / after a re-read / lost,
user prompts still verbatim at the end, the peak request, prompt-too-long errors, seconds. Then the
issue's bounds, each PASS or FAIL with its figures.

Claude Code does not accept a window under 100k (CLAUDE_CODE_AUTO_COMPACT_WINDOW): at 60k only
ctxtui runs. The server counts tokens as characters / 3.5 of each block's JSON (neither client's
own estimator).

Usage: .venv/bin/python bench/vs_claude_code.py [--windows 200000,100000,60000]
       [--workloads recall-a,recall-b,reads-only] [--clients claude-code,claude-code-proactive,ctxtui,ctxtui-cc]
       [--jobs 2] [--cache DIR] [--json FILE] [--replay]
About 15 minutes on 2 cores for the defaults (30 sessions of 112–100 prompts, 15–25 s each).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent_core.replay.predict import predict_cost  # noqa: E402
from tests.closed_loop_peer import (CC_VERSION, WORKLOADS, Client, PeerFigures, PeerRun, claude_code,  # noqa: E402
                                    claude_code_binary, ctxtui, run_client, session_log)
from tests.fake_anthropic.usage import chars_tokenizer  # noqa: E402

CC_FLOOR = 100_000          # Claude Code refuses a smaller CLAUDE_CODE_AUTO_COMPACT_WINDOW
BASELINES = ("claude-code", "claude-code-proactive")


def ctxtui_executable() -> Path:
    """The `ctxtui` command as installed beside this Python (the venv's), else on PATH."""
    here = Path(sys.executable).with_name("ctxtui")
    found = here if here.exists() else shutil.which("ctxtui")
    if not found:
        raise SystemExit("the ctxtui command is not installed: run `make run` once (it creates .venv)")
    return Path(found)


def clients(names: list[str], cache: Path) -> dict[str, Client]:
    exe = Path(os.environ.get("CTXTUI_EXE") or ctxtui_executable())
    out: dict[str, Client] = {}
    for name in names:
        if name.startswith("claude-code"):
            out[name] = claude_code(claude_code_binary(cache), proactive=name.endswith("proactive"))
        elif name == "ctxtui":
            out[name] = ctxtui(exe)
        elif name.startswith("ctxtui-"):
            out[name] = ctxtui(exe, policy=name.removeprefix("ctxtui-"))
        else:
            raise SystemExit(f"unknown client {name!r}: claude-code, claude-code-proactive, ctxtui, ctxtui-POLICY")
    return out


def row(f: PeerFigures, base: dict[str, PeerFigures]) -> str:
    ratios = " ".join(f"{f.dollars / base[b].dollars:>5.2f}×" if b in base and base[b].dollars else "    - "
                      for b in BASELINES)
    recalls = f"{f.answered}/{f.rereads}/{f.lost}" if f.questions else "-"
    acted = ", ".join(f"{k}×{v}" for k, v in sorted(f.layers.items())) or "-"
    errs = f"  errors: {len(f.errors)} ({f.errors[0]})" if f.errors else ""
    return (f"  {f.client:<22} ${f.dollars:>7.3f} {ratios}  {f.main_requests:>4}/{f.summary_requests:<3} "
            f"{f.compactions:>4}  {recalls:>9}  {f.prompts_kept:>3}/{f.prompts:<3} {f.peak_tokens:>8,} "
            f"{f.prompt_too_long:>4} {f.seconds:>5.0f}s  {acted}{errs}")


HEADER = (f"  {'client':<22} {'dollars':>8} {'÷cc':>6} {'÷cc-pro':>6}  {'main/sum':<8} {'comp':>4}  "
          f"{'ctx/rr/lost':>9}  {'prompts':<7} {'peak':>8} {'ptl':>4} {'time':>6}  compactions")


# Replay's predictions checked against the live runs: (log of client, policy replayed, live client it predicts).
PREDICTIONS = (("claude-code", "cc", "claude-code"), ("claude-code", "ctxtui", "ctxtui"),
               ("ctxtui", "ctxtui", "ctxtui"), ("ctxtui-cc", "cc", "ctxtui-cc"))


def replay_checks(runs: dict[tuple[str, int, str], PeerRun]) -> list[tuple[bool, str]]:
    """Replay each client's log under a policy and compare with what that policy's client paid live."""
    checks: list[tuple[bool, str]] = []
    print("Replay against the loop (predicted ÷ live; recorded: what replay read the log as paying):")
    for (wl, w, name), run in sorted(runs.items()):
        for source, policy, live_name in PREDICTIONS:
            live = runs.get((wl, w, live_name))
            log = session_log(run) if name == source else None
            if live is None or log is None:
                continue
            # another client's log: that client's fixed head (system prompt and tools) is not what the
            # predicted one would send; replay swaps in the live client's, as its server counted it
            head = live.figures.head_tokens if runs[(wl, w, source)].figures.client != live_name else None
            p = predict_cost(log, policy, w, head_tokens=head)
            if p.predicted_usd is None:
                checks.append((False, f"{wl} at {w // 1000}k: replay of {source}'s log under {policy}: no price"))
                continue
            r = p.predicted_usd / live.figures.dollars
            rec = f", recorded ${p.recorded_usd:.3f} ({p.recorded_source})" if p.recorded_usd is not None else ""
            swap = f" (head {head:,})" if head else ""
            print(f"  {wl:<10} {w // 1000:>4}k  {source}'s log as {policy:<7}{swap} ${p.predicted_usd:7.3f} vs live "
                  f"{live_name} ${live.figures.dollars:7.3f}: {r:.2f}×  (re-reads {p.rereads} vs live "
                  f"{live.figures.rereads}, summaries {p.summary_calls} vs {live.figures.summary_requests}{rec})")
            checks.append((abs(r - 1) <= 0.10, f"{wl} at {w // 1000}k: replay of {source}'s log under {policy} "
                                               f"{r:.2f}× of live {live_name} (within ±10%)"))
    print()
    return checks


def bounds(results: dict[tuple[str, int, str], PeerFigures]) -> list[tuple[bool, str]]:
    """The issue's bounds on what this run measured: (held, what and the figures)."""
    checks: list[tuple[bool, str]] = []
    for (wl, w, name), f in sorted(results.items()):
        where = f"{wl} at {w // 1000}k"
        if name == "ctxtui":
            limit = 0.9 if not f.questions else 0.85
            for b in BASELINES:
                peer = results.get((wl, w, b))
                if peer is None:
                    continue
                r = f.dollars / peer.dollars
                checks.append((r <= limit, f"{where}: ctxtui ÷ {b} {r:.2f}× (at most {limit}×)"))
                if f.questions:
                    checks.append((f.answered >= peer.answered,
                                   f"{where}: recalls from context {f.answered} vs {b} {peer.answered}"))
            checks.append((f.lost == 0, f"{where}: ctxtui facts lost {f.lost}"))
            checks.append((f.prompt_too_long == 0, f"{where}: ctxtui prompt-too-long {f.prompt_too_long}"))
        if name == "ctxtui-cc" and (wl, w, "claude-code") in results:
            peer = results[(wl, w, "claude-code")]
            r = f.dollars / peer.dollars
            net = (f.dollars - f.head_dollars) / (peer.dollars - peer.head_dollars)
            checks.append((abs(r - 1) <= 0.05, f"{where}: --policy cc ÷ claude-code {r:.2f}× (within ±5%); "
                                               f"without each one's fixed head (system prompt and tools, "
                                               f"{f.head_tokens / 1000:.1f}k vs {peer.head_tokens / 1000:.1f}k "
                                               f"tokens: ${f.head_dollars:.2f} vs ${peer.head_dollars:.2f} of "
                                               f"reads) {net:.2f}×"))
            if peer.compactions:
                c = f.compactions / peer.compactions
                left = [sum(x.after_compaction) // max(1, len(x.after_compaction)) for x in (f, peer)]
                checks.append((abs(c - 1) <= 0.25, f"{where}: --policy cc compactions {f.compactions} vs "
                                                   f"{peer.compactions} (within ±25%); each left {left[0]:,} vs "
                                                   f"{left[1]:,} tokens on average (heads {f.head_tokens:,} vs "
                                                   f"{peer.head_tokens:,}), the room to a threshold that follows"))
    return checks


def tables(results, workloads, windows, names) -> None:
    """One table per workload and window."""
    for wl in workloads:
        for w in windows:
            here = {name: results[(wl.name, w, name)] for name in names if (wl.name, w, name) in results}
            if not here:
                continue
            print(f"{wl.name} ({wl.reads} reads, {wl.questions} recalls {wl.min_gap}–{wl.max_gap} prompts later, "
                  f"seed {wl.seed}) at {w:,}")
            print(HEADER)
            for f in here.values():
                print(row(f, here))
            print()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--windows", default="200000,100000,60000")
    p.add_argument("--workloads", default="recall-a,recall-b,reads-only")
    p.add_argument("--clients", default="claude-code,claude-code-proactive,ctxtui,ctxtui-cc")
    p.add_argument("--jobs", type=int, default=2, help="sessions at once (default 2: this machine's cores)")
    p.add_argument("--cache", default=str(Path.home() / ".cache" / "ctxtui-bench" / f"claude-code-{CC_VERSION}"),
                   help="where the pinned Claude Code is installed from npm when missing")
    p.add_argument("--chars-per-token", type=float, default=3.5, help="the fake server's token count")
    p.add_argument("--json", help="write every figure to this file")
    p.add_argument("--no-replay", action="store_true", help="skip replay's predictions of the live runs")
    a = p.parse_args(argv)
    windows = [int(x) for x in a.windows.split(",") if x]
    workloads = [WORKLOADS[x] for x in a.workloads.split(",") if x]
    names = [x for x in a.clients.split(",") if x]
    runners = clients(names, Path(a.cache))
    jobs = [(wl, w, name) for wl in workloads for w in windows for name in names
            if not (runners[name].kind == "claude-code" and w < CC_FLOOR)]
    tok = chars_tokenizer(a.chars_per_token)
    print(f"Claude Code {CC_VERSION} (npm) and ctxtui, {len(jobs)} sessions, {a.jobs} at a time; the server "
          f"counts {a.chars_per_token} characters a token; dollars at genai-prices' rates\n", flush=True)
    started = time.monotonic()
    results: dict[tuple[str, int, str], PeerFigures] = {}
    runs: dict[tuple[str, int, str], PeerRun] = {}
    with tempfile.TemporaryDirectory(prefix="ctxtui-vs-cc-") as tmp:
        def one(job: tuple) -> tuple[tuple[str, int, str], PeerRun]:
            wl, w, name = job
            run = run_client(runners[name], Path(tmp) / f"{wl.name}-{w}-{name}", wl, w, tokenizer=tok)
            print(f"  done: {wl.name} {w // 1000}k {name} (${run.figures.dollars:.3f}, "
                  f"{run.figures.seconds:.0f}s)", file=sys.stderr, flush=True)
            return (wl.name, w, name), run
        with ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
            for key, run in pool.map(one, jobs):
                results[key], runs[key] = run.figures, run
        tables(results, workloads, windows, names)
        replayed = [] if a.no_replay else replay_checks(runs)
    checks = bounds(results) + replayed
    print("Bounds (issue 49):")
    for ok, what in checks:
        print(f"  {'PASS' if ok else 'FAIL'}  {what}")
    print(f"\n{sum(ok for ok, _ in checks)} of {len(checks)} bounds hold; {time.monotonic() - started:.0f}s")
    if a.json:
        Path(a.json).write_text(json.dumps([asdict(f) for f in results.values()], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
