"""Colour in `ctxtui usage` tables: only in a terminal, never with NO_COLOR, TERM=dumb or --no-color,
always with --color, never in JSON; and the only escape codes are the table's own."""
from __future__ import annotations

import io
import re

import pytest

from agent_core.usage.colour import BOLD, DIM, RESET, wanted
from app.cli.usage import main
from tests.log_helpers import assistant, usage, write_log

OURS = re.compile(r"\x1b\[(?:1|2|0)m")


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("out", "env", "choice", "expected"), [
    (Tty(), {}, None, True),
    (io.StringIO(), {}, None, False),                    # a pipe or a file
    (Tty(), {"NO_COLOR": "1"}, None, False),
    (Tty(), {"TERM": "dumb"}, None, False),
    (Tty(), {"NO_COLOR": ""}, None, True),               # no-color.org: set and not empty
    (io.StringIO(), {"NO_COLOR": "1"}, True, True),      # --color
    (Tty(), {}, False, False),                           # --no-color
])
def test_when_there_is_colour(out, env, choice, expected):
    assert wanted(out, env, choice) is expected


@pytest.fixture
def root(tmp_path):
    write_log(tmp_path / "projects" / "evil\x1b[31mred" / "s.jsonl", [
        assistant("m1", "r1", u=usage(inp=100, out=1), ts="2025-06-14T10:00:00Z")])
    return str(tmp_path / "projects")


def run(*argv, out=None):
    out = out or io.StringIO()
    assert main(list(argv), stdout=out, stderr=io.StringIO()) == 0
    return out.getvalue()


def test_color_makes_the_header_and_totals_bold_and_the_notes_dim(root, monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    text = run("daily", root, "--utc", "--instances", "--color")
    lines = text.splitlines()
    assert lines[0].startswith(BOLD) and lines[0].endswith(RESET) and "Project / day" in lines[0]
    assert any(line.startswith(BOLD + "Total") for line in lines)
    assert any(line.startswith(DIM) and "session" in line for line in lines)
    assert OURS.sub("", text).count("\x1b") == 0          # the folder's own escape is shown, not sent
    assert "\x1b[31m" not in text


def test_no_colour_in_a_pipe_with_no_color_or_in_json(root, monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert "\x1b" not in run("daily", root, "--utc")                      # not a terminal
    assert "\x1b[1m" in run("daily", root, "--utc", out=Tty())            # a terminal
    assert "\x1b" not in run("daily", root, "--utc", "--no-color", out=Tty())
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b" not in run("daily", root, "--utc", out=Tty())
    assert "\x1b[" not in run("daily", root, "--utc", "--json", "--color")  # JSON escapes it as \u001b
    assert "\x1b" not in run("daily", root, "--json", "--color", out=Tty())
