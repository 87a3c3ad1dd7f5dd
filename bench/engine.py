"""Per-turn cost of the cheap compaction pipeline against a naive baseline, measured in one run.

For synthetic coding sessions of 200, 2,000 and 20,000 entries, each turn appends one API round
(an assistant response with a tool call and its usage, then the tool result) and runs
`Pipeline.run_cheap` (layers 1–4, token count, request projection). The baseline does what a
simple agent does every turn: re-estimate `len(str(messages)) // 4` over the whole history.

Scenarios:
- steady:    a window large enough that no layer fires — pure per-turn bookkeeping;
- pressure:  the count sits above microcompact's trigger, so it registers, batches and clears;
- collapsed: context collapse has committed spans, replayed (and re-projected) every turn.

Ours must grow with the new entries, not with the history: compare each row with the 200 row.
"view" is `Pipeline.view` (the projected view and its count without acting), which the loop adds
before the pipeline when tool results take the count into the warning band, to say that figure.
The one O(history) step left is a C-level copy of the request list (so the caller owns what it
gets; ~2 ns a message); "req. copy" shows it and "rest vs 200" the growth of everything else.
Usage: `.venv/bin/python bench/engine.py [--turns N]`.
"""
from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from compaction import ContextBudget, Entry, Pipeline, PipelineConfig, tool_result_block  # noqa: E402
from compaction.accounting.tokens import count_tokens  # noqa: E402

SIZES = (200, 2_000, 20_000)
TOOLS = ("bash", "read_file", "grep", "glob", "edit_file", "write_file")


class Session:
    """Deterministic synthetic session; every response's usage equals the estimated count so far."""

    def __init__(self) -> None:
        self.r = 0
        self.tokens = 0
        self.t = 1_700_000_000.0

    def first(self) -> Entry:
        e = Entry({"role": "user", "content": [{"type": "text", "text": "Find and fix the flaky test in tests/."}]},
                  timestamp=self.t)
        self.tokens += e.tokens
        return e

    def round(self) -> list[Entry]:
        r = self.r
        self.r += 1
        self.t += 20.0
        name = TOOLS[r % len(TOOLS)]
        tid = f"toolu_{r:07d}"
        inp = {"command": f"pytest tests/test_{r % 97}.py -q"} if name == "bash" else {"path": f"src/mod_{r % 311}.py"}
        size = 200 + (r * 7919) % 1_800  # 200..2,000 characters
        body = (f"# output {r}\n" + "result line of tool output\n" * (size // 27))[:size]
        if name == "bash":
            body += f"\nexit code {r % 3 == 0}"
        a = Entry({"role": "assistant", "content": [{"type": "text", "text": f"Checking part {r}."},
                                                    {"type": "tool_use", "id": tid, "name": name, "input": inp}]},
                  response_id=f"msg_{r:07d}", timestamp=self.t)
        usage = {"input_tokens": self.tokens, "output_tokens": a.tokens, "cache_creation_input_tokens": 0,
                 "cache_read_input_tokens": 0}
        a = Entry(a.message, uuid=a.uuid, response_id=a.response_id, usage=usage, timestamp=self.t)
        u = Entry({"role": "user", "content": [tool_result_block(tid, body)]}, timestamp=self.t + 1)
        self.tokens += a.tokens + u.tokens
        return [a, u]

    def history(self, n: int) -> list[Entry]:
        es = [self.first()]
        while len(es) < n:
            es += self.round()
        return es


def config(scenario: str, tokens: int) -> PipelineConfig:
    if scenario == "steady":
        return PipelineConfig(budget=ContextBudget(max(200_000, 4 * tokens), 32_000))
    if scenario == "pressure":  # count at ~60% of the window: above microcompact's 50% trigger
        w = int(tokens / 0.6 / 0.9) + 40_000
        return PipelineConfig(budget=ContextBudget(w, 32_000), snip_enabled=False, collapse_enabled=False,
                              micro_clear_at_least_ratio=0.002)
    # collapsed: the first run commits spans (count at ~95%), later turns replay them
    w = int(tokens / 0.95) + 20_000
    return PipelineConfig(budget=ContextBudget(w, 32_000, autocompact_enabled=False), snip_enabled=False,
                          microcompact_enabled=False, collapse_commit_ratio=0.9, collapse_target_ratio=0.6)


def time_ours(n: int, scenario: str, turns: int, session_dir: Path) -> tuple[float, float, float, dict, float]:
    s = Session()
    history = s.history(n)
    p = Pipeline(config(scenario, s.tokens), session_dir=session_dir)
    t0 = time.perf_counter()
    res = p.run_cheap(history, now=s.t + 5)  # first run: one full scan, then O(new) per turn
    first = time.perf_counter() - t0
    history = res.entries
    layers: dict[str, int] = {}
    samples, copies, views = [], [], []
    gc.collect()
    for _ in range(turns):
        new = s.round()
        t0 = time.perf_counter()
        history.extend(new)  # the loop appends to the history it adopted
        res = p.run_cheap(history, now=s.t + 5)
        samples.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        list(res.request)  # the one O(history) step left: handing the caller its own request list
        copies.append(time.perf_counter() - t0)
        history = res.entries
        t0 = time.perf_counter()
        p.view(history, now=s.t + 5)
        views.append(time.perf_counter() - t0)
        for r in res.reports:
            layers[r.layer] = layers.get(r.layer, 0) + 1
    assert res.request and res.tokens <= count_tokens(history) + 1
    return statistics.median(samples), statistics.median(copies), first, layers, statistics.median(views)


def time_naive(n: int, turns: int) -> float:
    s = Session()
    messages = [e.message for e in s.history(n)]
    samples = []
    gc.collect()
    for _ in range(turns):
        new = [e.message for e in s.round()]
        t0 = time.perf_counter()
        messages.extend(new)
        _ = len(str(messages)) // 4
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=40)
    args = ap.parse_args()
    print(f"per-turn time (median of {args.turns} turns; one round appended per turn)\n")
    naive = {n: time_naive(n, max(5, args.turns // (1 + n // 2_000))) for n in SIZES}
    with tempfile.TemporaryDirectory() as d:
        for scenario in ("steady", "pressure", "collapsed"):
            print(f"scenario: {scenario}")
            print(f"  {'entries':>8} {'ours/turn':>11} {'naive/turn':>11} {'naive÷ours':>11} "
                  f"{'ours vs 200':>11} {'req. copy':>10} {'rest vs 200':>11} {'first run':>10} {'view':>8}"
                  "  layers that acted")
            base = rest_base = None
            for n in SIZES:
                ours, copy, first, layers, view = time_ours(n, scenario, args.turns, Path(d) / f"{scenario}-{n}")
                base = base or ours
                rest = max(ours - copy, 1e-9)
                rest_base = rest_base or rest
                acted = ", ".join(f"{k}×{v}" for k, v in sorted(layers.items())) or "-"
                print(f"  {n:>8,} {ours * 1e6:>9.0f}µs {naive[n] * 1e6:>9.0f}µs {naive[n] / ours:>10.1f}× "
                      f"{ours / base:>10.2f}× {copy * 1e6:>8.0f}µs {rest / rest_base:>10.2f}× "
                      f"{first * 1e3:>8.1f}ms {view * 1e6:>6.0f}µs  {acted}")
            print()


if __name__ == "__main__":
    main()
