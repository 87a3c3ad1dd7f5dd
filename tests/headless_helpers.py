"""Run headless in-process, the way the command line does, and keep what it printed."""
from __future__ import annotations

import io

from pathlib import Path

from app.cli.headless import main as headless_main
from app.cli.main import build_parser
from tests.fake_anthropic import echo_responder, is_summary_request, reply, tool_use


def run_headless(argv: list[str], environ: dict) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `ctxtui --headless ARGV` with no input on stdin."""
    args = build_parser().parse_args(["--headless", *argv])
    out, err = io.StringIO(), io.StringIO()
    code = headless_main(args, stdin=io.StringIO(""), stdout=out, stderr=err, environ=environ)
    return code, out.getvalue(), err.getvalue()


def compacting_session(ws: Path):
    """A big file and a responder that reads it with bash eight times, with long answers, then
    stops: at a 12,000-token window the run compacts (summary calls are echoed). Returns it."""
    (ws / "big.txt").write_text("data line\n" * 800)
    calls = {"n": 0}

    def responder(body):
        if is_summary_request(body):
            return echo_responder(body)
        calls["n"] += 1
        if calls["n"] <= 8:
            return reply("reading: " + "notes " * 300, tool_use("bash", {"command": "cat big.txt"}))
        return reply("finished")
    return responder
