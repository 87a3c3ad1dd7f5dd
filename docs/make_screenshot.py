"""Retake docs/screenshot.svg from the real app: the TUI on the offline demo model, at 120×40, after
a short session over a copy of the compaction engine that compacts on its way (a 16,000-token window),
scrolled back to the last compaction marker.
Everything runs in a temporary home folder, so the paths on screen read ~/project/...

    .venv/bin/python docs/make_screenshot.py            # writes docs/screenshot.svg
"""
from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
from pathlib import Path

from textual.worker import WorkerState

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from app.tui.launch import build_app  # noqa: E402 - the repository's app, wherever this is run from
from app.tui.widgets.conversation.compaction_marker import MarkerRecord  # noqa: E402
PROMPTS = (
    "Explore the project and tell me what each module does",
    "How does the compaction pipeline decide what to drop?",
    "Read the snip and session memory layers and compare them",
    "/compact keep the pipeline order",
    "Where are the thresholds computed?",
)
SIZE = (120, 40)


async def take(out: Path) -> None:
    home = Path(os.environ["HOME"])
    workspace = home / "project"
    shutil.copytree(ROOT / "compaction", workspace / "compaction")
    shutil.copy(ROOT / "README.md", workspace / "README.md")
    app = build_app({"model": "demo", "allow": ["all"]}, environ={"CTXTUI_CONTEXT_WINDOW": "16000"},
                    workspace=workspace, claude_root=None)

    def running() -> bool:
        return any(w.group == "agent" and w.state in (WorkerState.PENDING, WorkerState.RUNNING)
                   for w in app.workers)

    async with app.run_test(size=SIZE) as pilot:
        app.prompt_input.cursor_blink = False
        for text in PROMPTS:
            app.fill_prompt(text)
            await pilot.press("enter")
            await pilot.pause()
            while running():
                await pilot.pause(0.05)
            await pilot.pause()
        app.fill_prompt("Summarise what you changed")
        # Scrolled back to the last compaction marker, as a user checking what it did would be.
        markers = app.conversation.records_of(MarkerRecord)
        if markers:
            app.conversation.scroll_to_record(markers[-1])
        await pilot.pause(0.5)
        app.save_screenshot(filename=out.name, path=str(out.parent))


def main() -> int:
    out = ROOT / "docs" / "screenshot.svg"
    # A fixed folder name: the paths on screen (the state folder is named after the workspace's)
    # come out the same on every run.
    tmp = Path(tempfile.gettempdir()) / "ctxtui-screenshot"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        for var, sub in (("HOME", "home"), ("CTXTUI_HOME", "home/.ctxtui"), ("XDG_STATE_HOME", "home/.local/state"),
                         ("XDG_CONFIG_HOME", "home/.config")):
            os.environ[var] = str(tmp / sub)
            Path(os.environ[var]).mkdir(parents=True, exist_ok=True)
        os.environ.pop("ANTHROPIC_API_KEY", None)
        asyncio.run(take(out))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
