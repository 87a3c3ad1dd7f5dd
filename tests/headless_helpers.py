"""Run headless in-process, the way the command line does, and keep what it printed."""
from __future__ import annotations

import io

from app.cli.headless import main as headless_main
from app.cli.main import build_parser


def run_headless(argv: list[str], environ: dict) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `ctxtui --headless ARGV` with no input on stdin."""
    args = build_parser().parse_args(["--headless", *argv])
    out, err = io.StringIO(), io.StringIO()
    code = headless_main(args, stdin=io.StringIO(""), stdout=out, stderr=err, environ=environ)
    return code, out.getvalue(), err.getvalue()
