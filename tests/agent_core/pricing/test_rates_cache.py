"""The learned-rates cache of `ctxtui usage` and sessions (agent_core/pricing/rates_cache.py): used
only when its stamp matches, malformed content ignored, and a second run prices without loading genai-prices."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from agent_core.pricing.cost import BUCKETS, price_buckets
from agent_core.pricing.pricer import Pricer
from agent_core.pricing import rates_cache, rates_table
from tests.log_helpers import MODEL, assistant, usage, write_log

ROOT = Path(__file__).resolve().parents[3]


def test_round_trip_and_stale_or_malformed_files_are_ignored(tmp_path):
    path = tmp_path / "c" / rates_cache.FILE_NAME
    p = Pricer()
    p.rates(MODEL)
    rates_cache.save(path, "stamp-1", p.learned())
    assert path.stat().st_mode & 0o777 == 0o600
    got = rates_cache.load(path, "stamp-1")
    assert got == p.learned() and MODEL in got
    assert rates_cache.load(path, "stamp-2") == {}                 # other price data: stale
    assert rates_cache.load(path, None) == {}
    data = json.loads(path.read_text())
    data["models"]["evil"] = [0.0, {k: -1.0 for k in BUCKETS}, 10]   # negative rates
    data["models"]["short"] = [0.0, {"input": 1.0}, 10]
    data["models"]["nan"] = [float("nan"), {k: 1.0 for k in BUCKETS}, 10]
    path.write_text(json.dumps(data))
    assert set(rates_cache.load(path, "stamp-1")) == {MODEL}
    path.write_text("{not json")
    assert rates_cache.load(path, "stamp-1") == {}


def test_known_rates_price_like_the_price_data(tmp_path):
    p = Pricer()
    p.rates(MODEL)
    cached = Pricer(price=lambda m, b: None, known=p.learned())     # no price data at all
    b = {"input": 1200, "output": 300, "cache_write_5m": 5000, "cache_write_1h": 700, "cache_read": 40_000}
    assert cached(MODEL, b) == price_buckets(MODEL, b)


def test_cache_dir_follows_ctxtui_home_then_xdg_then_home(tmp_path):
    assert rates_cache.cache_dir({"CTXTUI_HOME": str(tmp_path / "h")}) == tmp_path / "h" / "cache"
    assert rates_cache.cache_dir({"XDG_CACHE_HOME": str(tmp_path / "x")}) == tmp_path / "x" / "ctxtui"
    assert rates_cache.cache_dir({"HOME": str(tmp_path)}) == tmp_path / ".cache" / "ctxtui"


UNTABLED = "claude-3-5-sonnet-20240620"     # genai-prices prices it; the shipped table does not hold it


def test_a_second_report_prices_without_loading_genai_prices(tmp_path):
    """A model outside the shipped table loads genai-prices once; the rates it learned are kept."""
    assert UNTABLED not in rates_table.load()[0]
    log = write_log(tmp_path / "projects" / "p" / "s.jsonl",
                    [assistant("m", "r", u=usage(inp=1000, out=50), model=UNTABLED)])
    env = {"HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin", "CTXTUI_HOME": str(tmp_path / "state")}
    code = ("import sys, io, json, contextlib; from app.cli.main import main\n"
            "out = io.StringIO()\n"
            "with contextlib.redirect_stdout(out): rc = main(sys.argv[1:])\n"
            "print(json.dumps([rc, 'genai_prices' in sys.modules, json.loads(out.getvalue())['totals']['cost_usd']]))")

    def run():
        r = subprocess.run([sys.executable, "-c", code, "usage", "daily", str(log), "--json"], capture_output=True,
                           text=True, timeout=60, cwd=ROOT, env=env)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)

    first, second = run(), run()
    assert first[:2] == [0, True] and second[:2] == [0, False]
    assert second[2] == first[2] == round(price_buckets(UNTABLED, {"input": 1000, "output": 50}), 6)
    assert (tmp_path / "state" / "cache" / rates_cache.FILE_NAME).is_file()


def test_a_second_session_starts_without_loading_the_price_data(tmp_path):
    """genai-prices took half a second of every start-up (the engine's cache rates); the rates the
    first session learned are kept, so the next one never loads it."""
    ws = tmp_path / "ws"
    ws.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CTXTUI_", "XDG_"))}
    env.update(HOME=str(tmp_path / "home"), CTXTUI_HOME=str(tmp_path / "state"))
    code = ("import sys; from app.cli.main import main; rc = main(['--headless', '-p', 'hi', '--workspace', "
            f"{str(ws)!r}]); print('LOADED' if 'genai_prices' in sys.modules else 'NOT LOADED', file=sys.stderr); "
            "sys.exit(rc)")
    runs = [subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120,
                           cwd=str(ROOT)) for _ in range(2)]
    assert [r.returncode for r in runs] == [0, 0], runs[0].stderr + runs[1].stderr
    assert runs[0].stderr.strip().endswith("LOADED") and runs[1].stderr.strip().endswith("NOT LOADED")
