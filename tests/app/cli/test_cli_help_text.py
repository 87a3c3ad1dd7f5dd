"""The help a user reads first (a user's report): `ctxtui --help` lists `usage` with its report
names, and `usage --help` / `watch --help` say where the logs live (Claude Code's projects folder,
ctxtui's state folder), never that they live in the workspace."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from app.cli.usage import REPORTS


def help_of(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "app.cli.main", *args, "--help"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_main_help_names_the_usage_reports():
    text = help_of()
    (line,) = [ln for ln in text.splitlines() if ln.strip().startswith("ctxtui usage")]
    assert all(name in line for name in REPORTS), line


def test_the_usage_synopsis_names_the_reports():
    synopsis = help_of("usage").splitlines()[0]
    assert synopsis.startswith("usage: ctxtui usage") and all(name in synopsis for name in REPORTS), synopsis


@pytest.mark.parametrize("command", ["usage", "watch"])
def test_usage_and_watch_help_say_where_the_logs_live(command):
    text = " ".join(help_of(command).split())
    assert "~/.claude/projects" in text and "state folder" in text
    assert not re.search(r"logs? (live|are kept|is kept) in the workspace", text), text
    assert not re.search(r"in the workspace'?s? \.ctxtui", text), text
