"""Start-up in a fresh interpreter, for the start-up tests (tests/app/cli/test_headless_startup.py)
and bench/startup.py: each probe runs one thing in a subprocess and reports when it happened (wall
clock, against the moment the parent started the process) and whether the `anthropic` SDK was
loaded at that moment.

Probes (`python -c PROBE MODE REPORT_PATH ARGS...`):
  headless ARGV...   `app.cli.main.main(ARGV)`, the command's own entry point, with stdout
                     recorded: the first line written and the first `context` event
  import MODULE...    `import MODULE` for each (`import textual`: the baseline of the figures)
  tui [WS] [MODEL]   ctxtui's TUI (app.tui.launch.build_app, as `ctxtui` builds it, the collector
                     held off until the first frame as the command holds it) run headless until its
                     first screen update, then exit
  minimal            a bare `textual.app.App` run headless until its first screen update
  tui-turn WS        the TUI on the demo model (tools allowed): first screen, idle before a
                     prompt, one prompt typed, the turn's end

A screen update is a call of `App._display` with something to show: Textual calls it once the
compositor has rendered the screen (headless, it computes the update and writes it nowhere); both
apps are timed by the same hook. The SDK's import is seen by a finder placed first on
`sys.meta_path` that records the first time `anthropic` is looked for and finds nothing itself.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PROBE = r'''
import json, sys, time
sdk = {}

class _Watch:
    def find_spec(self, name, path=None, target=None):
        if name == "anthropic" and "t" not in sdk:
            sdk["t"] = time.time()
        return None

sys.meta_path.insert(0, _Watch())
mode, report_path, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
report = {}

# loaded only when first wanted, not before a first paint (an answer, a watch, a new session file)
DEFERRED = ("markdown_it", "pygments", "textual.widgets._markdown", "watchfiles")

def moment():
    return {"t": time.time(), "sdk_loaded": "anthropic" in sys.modules,
            "deferred": [m for m in DEFERRED if m in sys.modules]}

class _Stdout:
    """What headless writes (one event a write, no `buffer`: written as text), recorded."""
    encoding = "utf-8"
    def __init__(self, real):
        self.real = real
    def write(self, text):
        if "first" not in report and text.strip():
            report["first"] = moment()
        if "context" not in report and '"type": "context"' in text:
            report["context"] = moment()
        return self.real.write(text)
    def flush(self):
        self.real.flush()
    def isatty(self):
        return False

def first_paint_exits():
    from textual.app import App
    display = App._display
    def _display(self, screen, renderable):
        display(self, screen, renderable)
        if renderable is not None and "paint" not in report:
            report["paint"] = moment()
            self.exit()
    App._display = _display

if mode == "headless":
    sys.stdout = _Stdout(sys.stdout)
    from app.cli.main import main
    report["rc"] = main(argv)
elif mode == "import":
    import importlib
    for name in argv:
        importlib.import_module(name)
    report["imported"] = moment()
elif mode == "minimal":
    first_paint_exits()
    from textual.app import App
    App().run(headless=True)
elif mode == "tui":
    from app.tui import heap
    heap.hold()             # as the ctxtui command does before it loads the TUI (app/cli/main.py)
    first_paint_exits()
    from app.tui.launch import build_app
    cli = {"model": argv[1]} if len(argv) > 1 else {}
    app = build_app(cli, workspace=argv[0] if argv else None, claude_root=None, paced=True, settle_heap=True,
                    lazy_side=True)
    app.run(headless=True)
    report["model"] = app.agent.info.model
elif mode == "tui-turn":
    import asyncio
    from app.tui.launch import build_app
    app = build_app({"model": "demo", "allow": ["all"]}, workspace=argv[0], claude_root=None)
    async def drive():
        async with app.run_test() as pilot:
            report["ready"] = moment()
            await pilot.pause()
            report["idle"] = moment()      # the first frame drawn, no prompt yet
            app.prompt_input.focus()
            app.fill_prompt("explore this project")
            await pilot.press("enter")
            await pilot.pause()
            deadline = time.monotonic() + 60
            while app.busy and time.monotonic() < deadline:
                await pilot.pause(0.02)
            report["turns"] = app.agent.turns
    asyncio.run(drive())
sys.stdout = getattr(sys.stdout, "real", sys.stdout)
report["exit"] = moment()
report["sdk_imported"] = sdk.get("t")
with open(report_path, "w") as f:
    json.dump(report, f)
'''


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without any ANTHROPIC_ or CTXTUI_ setting of the caller's, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CTXTUI_"))}
    env.update(extra)
    return env


def probe(mode: str, *args: str, env: dict[str, str] | None = None, stdin: str = "",
          timeout: float = 120, root: Path = ROOT) -> dict:
    """Run one probe on the code of the checkout at `root`; its report with every time made
    relative to the process's start (seconds), plus `stdout`, `stderr` and `returncode`."""
    with tempfile.TemporaryDirectory() as tmp:
        report_path = Path(tmp) / "report.json"
        started = time.time()
        proc = subprocess.run([sys.executable, "-c", PROBE, mode, str(report_path), *args], cwd=str(root),
                              env=env if env is not None else clean_env(), input=stdin, capture_output=True,
                              text=True, timeout=timeout)
        report = json.loads(report_path.read_text()) if report_path.exists() else {}
    for value in report.values():
        if isinstance(value, dict) and "t" in value:
            value["t"] = value["t"] - started
    if isinstance(report.get("sdk_imported"), float):
        report["sdk_imported"] -= started
    report.update(stdout=proc.stdout, stderr=proc.stderr, returncode=proc.returncode)
    return report
