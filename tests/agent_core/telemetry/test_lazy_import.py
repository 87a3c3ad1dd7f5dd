"""No collector, no OpenTelemetry: a headless demo run in a fresh interpreter loads none of it; with
a collector named, the same run does (so the check can see it)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.agent_helpers import make_workspace
from tests.otlp_receiver import OtlpReceiver

ROOT = Path(__file__).resolve().parents[3]
CODE = ("import sys\n"
        "sys.argv = ['ctxtui', '--headless', '-p', 'hi', '--workspace', sys.argv[1], '--output-format', 'json']\n"
        "from app.cli.main import main\n"
        "rc = main()\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] == 'opentelemetry' or "
        "m in ('agent_core.telemetry.exporter', 'agent_core.telemetry.sink'))\n"
        "print('LOADED', len(loaded), *loaded[:3], file=sys.stderr)\n"
        "sys.exit(rc)\n")


def _run(ws: Path, tmp_path: Path, extra: dict) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CTXTUI_", "OTEL_"))}
    env.update({"CTXTUI_HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "config"), **extra})
    proc = subprocess.run([sys.executable, "-c", CODE, str(ws)], cwd=str(ROOT), env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return next(line for line in proc.stderr.splitlines() if line.startswith("LOADED"))


def test_no_collector_loads_no_opentelemetry(tmp_path):
    ws = make_workspace(tmp_path)
    assert _run(ws, tmp_path, {}) == "LOADED 0"
    with OtlpReceiver() as rx:
        line = _run(ws, tmp_path, {"OTEL_EXPORTER_OTLP_ENDPOINT": rx.url})
    assert int(line.split()[1]) > 0 and "opentelemetry" in line
    assert "/v1/metrics" in rx.paths
