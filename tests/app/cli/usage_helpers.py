"""Running `ctxtui usage` in-process in tests: its exit code, stdout and stderr, or its JSON."""
from __future__ import annotations

import io
import json

from app.cli.usage import main


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def run_json(*argv):
    code, out, err = run(*argv, "--json")
    assert code == 0, err
    return json.loads(out), err
