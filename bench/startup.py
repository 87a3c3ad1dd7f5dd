"""Start-up time (issue 23): how long until ctxtui shows something, against Textual in the same run.

Every figure is a fresh interpreter (tests/startup_probe.py), timed from the moment this script
starts the process, the median of --runs runs:

  import textual          `python -c "import textual"`: the baseline of the headless figures
  import the CLI          `import app.cli.main, app.cli.headless` (what `ctxtui --headless` loads)
  headless demo           `ctxtui --headless --model demo -p hi --output-format stream-json`:
                          its first `context` event on stdout
  headless real model     the same with a key, through the real SDK against the loopback fake
                          server (tests/fake_anthropic): the first `context` event, then when the
                          SDK's import began, then the end of the run (the answer included)
  minimal Textual app     a bare `App()` run headless: its first screen update (the baseline of
                          the TUI figures)
  TUI demo / real model   ctxtui's TUI (as `ctxtui` builds it) run headless: its first screen
                          update, timed by the same hook as the minimal app

"SDK" says whether `anthropic` was loaded at that moment. Bytecode is cached (in a temp folder),
as an installed ctxtui has it, after one warm-up run of each; --no-pyc keeps the environment's
PYTHONDONTWRITEBYTECODE, which compiles ctxtui's modules on every start. --root measures another
checkout with the same probes (e.g. `git worktree add /tmp/old HEAD~1`, then --root /tmp/old).

Usage: .venv/bin/python bench/startup.py [--runs 5] [--no-pyc] [--root DIR]
Prints seconds and ratios; nothing is asserted.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fake_anthropic import FakeAnthropic, echo_responder  # noqa: E402
from tests.startup_probe import clean_env, probe  # noqa: E402

MODEL = "claude-sonnet-4-6"
KEY = "sk-ant-bench-0000000000000000"


def measure(runs: int, one: Callable[[], dict], *keys: str) -> tuple[dict[str, float | None], list[dict]]:
    """The median over `runs` runs (after a warm-up) of each key's time; the reports."""
    one()          # warm-up: writes the bytecode cache, fills the page cache
    return summed([one() for _ in range(runs)], keys)


def alternated(runs: int, *probes: tuple[Callable[[], dict], tuple[str, ...]]) -> list[tuple[dict, list[dict]]]:
    """`measure` for several probes run in turns (a, b, c, a, b, c, ...), so that a machine that
    slows down or speeds up during the bench moves a figure and its baseline alike."""
    for one, _ in probes:
        one()      # warm-up
    reports: list[list[dict]] = [[] for _ in probes]
    for _ in range(runs):
        for i, (one, _) in enumerate(probes):
            reports[i].append(one())
    return [summed(r, keys) for r, (_, keys) in zip(reports, probes)]


def summed(reports: list[dict], keys: tuple[str, ...]) -> tuple[dict[str, float | None], list[dict]]:
    for r in reports:
        if r["returncode"] != 0:
            sys.exit(f"a probe failed:\n{r['stderr'][-3000:]}")
    out: dict[str, float | None] = {}
    for key in keys:
        values = [_time(r, key) for r in reports]
        out[key] = statistics.median(values) if None not in values else None
    return out, reports


def _time(report: dict, key: str) -> float | None:
    value = report.get(key)
    return value["t"] if isinstance(value, dict) else value


def sdk_flag(reports: list[dict], key: str) -> str:
    loaded = {bool(r[key]["sdk_loaded"]) for r in reports if isinstance(r.get(key), dict)}
    return "yes" if loaded == {True} else "no" if loaded == {False} else "mixed"


def row(name: str, seconds: float | None, base: float | None, sdk: str = "") -> None:
    if seconds is None:
        print(f"  {name:<44} {'-':>8}")
        return
    ratio = f"{seconds / base:6.2f}x" if base else ""
    print(f"  {name:<44} {seconds * 1000:7.0f} ms  {ratio:>8}  {sdk}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--no-pyc", action="store_true", help="as the environment says about bytecode")
    ap.add_argument("--root", type=Path, default=ROOT, help="the checkout whose code is measured")
    args = ap.parse_args()
    root = args.root.resolve()
    with tempfile.TemporaryDirectory(prefix="ctxtui-startup-bench-") as tmp:
        base_env = clean_env(CTXTUI_HOME=str(Path(tmp, "state")), XDG_CONFIG_HOME=str(Path(tmp, "config")),
                             XDG_STATE_HOME=str(Path(tmp, "xdg-state")), HOME=str(Path(tmp, "home")))
        if not args.no_pyc:
            base_env.pop("PYTHONDONTWRITEBYTECODE", None)
            base_env["PYTHONPYCACHEPREFIX"] = str(Path(tmp, "pycache"))
        ws = Path(tmp, "ws")
        ws.mkdir()
        (ws / "README.md").write_text("# bench\n")
        n = args.runs

        def run(mode: str, *a: str, env: dict | None = None) -> Callable[[], dict]:
            return lambda: probe(mode, *a, env=env or base_env, root=root)

        headless = ("--headless", "-p", "hi", "--workspace", str(ws), "--output-format", "stream-json")
        pyc = "as the environment says" if args.no_pyc else "cached"
        print(f"start-up of {root} (median of {n} runs; the first paints in turns; bytecode {pyc})")
        print(f"  {'':<44} {'time':>8}  {'vs base':>8}  SDK loaded")
        textual, _ = measure(n, run("import", "textual"), "imported")
        base = textual["imported"]
        row("import textual (baseline)", base, None)
        cli, reps = measure(n, run("import", "app.cli.main", "app.cli.headless"), "imported")
        row("import app.cli.main, app.cli.headless", cli["imported"], base, sdk_flag(reps, "imported"))
        demo, reps = measure(n, run("headless", *headless, "--model", "demo"), "context", "exit")
        row("headless demo: first context event", demo["context"], base, sdk_flag(reps, "context"))
        row("headless demo: end of the run", demo["exit"], base, sdk_flag(reps, "exit"))
        with FakeAnthropic(responder=echo_responder) as fake:
            real_env = {**base_env, "ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": fake.base_url}
            real, reps = measure(n, run("headless", *headless, "--model", MODEL, env=real_env),
                                 "context", "sdk_imported", "exit")
            row("headless real SDK (fake server): first context", real["context"], base, sdk_flag(reps, "context"))
            row("headless real SDK: the SDK's import begins", real["sdk_imported"], base)
            row("headless real SDK: end of the run (answer in)", real["exit"], base, sdk_flag(reps, "exit"))
            (minimal, _), (tui, reps), (tui_real, reps_real) = alternated(
                n, (run("minimal"), ("paint",)), (run("tui", str(ws), "demo"), ("paint",)),
                (run("tui", str(ws), MODEL, env=real_env), ("paint",)))
            paint = minimal["paint"]
            print()
            row("minimal Textual app: first paint (baseline)", paint, None)
            row("TUI demo: first paint", tui["paint"], paint, sdk_flag(reps, "paint"))
            row("TUI real model: first paint", tui_real["paint"], paint, sdk_flag(reps_real, "paint"))
    print(f"\nload average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
