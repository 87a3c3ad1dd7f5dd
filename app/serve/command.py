"""What a browser tab starts: ctxtui itself, as an argv list, turned into a shell string only by shlex.

textual-serve starts its app with `asyncio.create_subprocess_shell(command)`, so the command is a
string for /bin/sh. Every word of it comes from `shlex.join` over a list (this interpreter, ctxtui's
own entry, the user's arguments), so no argument, however hostile, is read by the shell as anything
but one word; `exec` makes the shell become ctxtui, so the signals textual-serve sends reach it.

Only the commands that open a screen can be served: the TUI (`ctxtui [OPTIONS]`) and `ctxtui watch`.
The rest print and exit (--headless, usage, statusline, replay without a terminal) and would only
show "session ended" in the page."""
from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import Sequence

import app

# ctxtui's top-level folder: the one holding app/, agent_core/, compaction/ (site-packages when installed).
HOME = Path(app.__file__).resolve().parent.parent

SCREENS = ("watch",)                                     # subcommands with a screen, besides the TUI
NO_SCREEN = ("--headless", "--help", "--version")        # TUI options that never open one
NO_SCREEN_SHORT = ("-h",)


class NotServable(ValueError):
    """The arguments name a ctxtui command that does not open a screen."""


def check_servable(args: Sequence[str]) -> None:
    """Raise NotServable unless `args` (ctxtui's arguments) open the TUI or watch."""
    if not args or args[0] in SCREENS:
        return
    first = args[0]
    if not first.startswith("-"):
        raise NotServable(f"{first!r} is not a command with a screen: ctxtui serve serves the TUI "
                          f"(ctxtui serve -- [OPTIONS]) or watch (ctxtui serve watch [PATH])")
    for word in args:
        if word == "--":
            break
        name = word.split("=", 1)[0]
        # argparse takes any unambiguous prefix of a long option (--head is --headless)
        if name in NO_SCREEN_SHORT or (name.startswith("--") and len(name) > 2
                                       and any(option.startswith(name) for option in NO_SCREEN)):
            raise NotServable(f"{word!r} runs ctxtui without a screen; ctxtui serve serves the TUI or watch")


def ctxtui_argv(args: Sequence[str], *, cwd: Path | None = None) -> list[str]:
    """The argv that runs `ctxtui ARGS` with this interpreter and this ctxtui.

    `python -m app.cli` puts the current folder first on sys.path, so in a project with its own
    app/ package it would run that project's code; -P (Python 3.11) leaves the current folder out,
    and ctxtui loads from where this one was found. Only when the current folder is ctxtui's own
    checkout (the only place it was found) is -P left off."""
    here = (cwd or Path.cwd()).resolve()
    safe_path = [] if here == HOME else ["-P"]
    return [sys.executable, *safe_path, "-m", "app.cli", *args]


def shell_command(argv: Sequence[str]) -> str:
    """The string textual-serve hands to /bin/sh: exactly `argv`, each word quoted."""
    if not argv:
        raise ValueError("an empty command")
    return "exec " + shlex.join(os.fspath(word) for word in argv)
