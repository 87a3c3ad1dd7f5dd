"""The shipped rates table (agent_core/pricing/rates_table.py): true to the installed genai-prices,
used only while its stamp matches, and a first report over Claude's models never imports
genai-prices."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agent_core.pricing import rates_table
from agent_core.pricing.cost import BUCKETS, context_window, price_buckets
from agent_core.pricing.pricer import Pricer
from tests.log_helpers import MODEL, assistant, usage, write_log

ROOT = Path(__file__).resolve().parents[3]
_SHIPPED = json.loads(rates_table.TABLE.read_text(encoding="utf-8"))
_MATCHES = _SHIPPED.get("stamp") == rates_table.installed_stamp()


@pytest.mark.skipif(not _MATCHES, reason="another genai-prices than the table was made from: it is ignored")
def test_the_table_is_what_the_installed_genai_prices_gives():
    assert json.loads(json.dumps(rates_table.build())) == _SHIPPED
    assert rates_table.main(["--check"]) == 0


@pytest.mark.skipif(not _MATCHES, reason="another genai-prices than the table was made from: it is ignored")
@pytest.mark.parametrize("model", ["claude-opus-4-6", MODEL, "claude-haiku-4-5-20251001", "claude-sonnet-4-20250514"])
@pytest.mark.parametrize("when", [1_750_000_000.0, 1_772_000_000.0, 1_790_000_000.0])
def test_a_pricer_seeded_from_the_table_prices_as_genai_prices_does(model, when):
    periods, windows = rates_table.load()
    seeded = Pricer(known=periods, price=lambda *a: pytest.fail("genai-prices asked"),
                    period=lambda *a: pytest.fail("genai-prices asked"))
    for buckets in ({"input": 1200, "output": 300, "cache_write_5m": 5000, "cache_write_1h": 700, "cache_read": 90_000},
                    dict.fromkeys(BUCKETS, 0), {"input": 3, "output": 199_000, "cache_read": 190_000}):
        assert seeded(model, buckets, when) == pytest.approx(price_buckets(model, buckets, when), rel=1e-9)
    assert windows[model] == context_window(model)


def test_a_stale_or_damaged_table_is_ignored(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({**_SHIPPED, "stamp": "1:0.0.1:5"}))
    assert rates_table._read(path, rates_table.installed_stamp()) == ({}, {})
    assert rates_table._read(path) == ({}, {})                  # its own stamp names a version not installed
    assert rates_table._read(rates_table.TABLE) == rates_table.load()
    path.write_text("{not json")
    assert rates_table._read(path, "x") == ({}, {})
    good = [[None, None, [0.0, dict.fromkeys(BUCKETS, 1e-6), 200_000]]]
    bad = {"stamp": "s", "models": {"m": [[None, None, [0.0, {"input": -1}, 5]]], "ok": good},
           "windows": {"m": "big", "ok": 200_000}}
    path.write_text(json.dumps(bad))
    periods, windows = rates_table._read(path, "s")
    assert set(periods) == {"ok"} and windows == {"ok": 200_000}


@pytest.mark.skipif(not _MATCHES, reason="another genai-prices than the table was made from: it is ignored")
def test_a_first_report_over_claude_models_never_imports_genai_prices(tmp_path):
    log = write_log(tmp_path / "projects" / "p" / "s.jsonl", [assistant("m", "r", u=usage(inp=1000, out=50))])
    env = {"HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin", "CTXTUI_HOME": str(tmp_path / "state")}
    code = ("import sys, io, json, contextlib; from app.cli.main import main\n"
            "out = io.StringIO()\n"
            "with contextlib.redirect_stdout(out): rc = main(sys.argv[1:])\n"
            "print(json.dumps([rc, 'genai_prices' in sys.modules, json.loads(out.getvalue())['totals']['cost_usd']]))")
    r = subprocess.run([sys.executable, "-c", code, "usage", "daily", str(log), "--json"], capture_output=True,
                       text=True, timeout=60, cwd=ROOT, env=env)
    assert r.returncode == 0, r.stderr
    rc, loaded, usd = json.loads(r.stdout)
    assert (rc, loaded) == (0, False)
    assert usd == round(price_buckets(MODEL, {"input": 1000, "output": 50}), 6)
