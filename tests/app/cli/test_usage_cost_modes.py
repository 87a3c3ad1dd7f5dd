"""`ctxtui usage --mode auto|calculate|display` and `--debug`: which dollars a report counts when a
Claude Code log carries its own price (`costUSD`, written by some versions), and the responses whose
logged and calculated prices differ."""
from __future__ import annotations

import json

import pytest

from agent_core.pricing.cost import price_buckets, usage_buckets
from tests.app.cli.usage_helpers import run, run_json
from tests.log_helpers import MODEL, assistant, usage, write_log


def priced(u: dict) -> float:
    return price_buckets(MODEL, usage_buckets(u))


@pytest.fixture
def root(tmp_path):
    """Three responses: one logged at its exact price, one logged at 1.00 (wrong on purpose),
    one with no costUSD; and a model without price data that has a logged price."""
    u1, u2, u3 = usage(inp=1000, out=100), usage(inp=2000, out=200), usage(inp=4000, out=400)
    write_log(tmp_path / "projects" / "p" / "s.jsonl", [
        assistant("m1", "r1", u=u1, ts="2025-06-14T10:00:00Z", costUSD=priced(u1)),
        assistant("m2", "r2", u=u2, ts="2025-06-14T10:01:00Z", costUSD=1.0),
        assistant("m3", "r3", u=u3, ts="2025-06-14T10:02:00Z"),
        assistant("m4", "r4", u=u1, ts="2025-06-14T10:03:00Z", model="mystery-model-9", costUSD=0.25),
        assistant("m5", "r5", u=u1, ts="2025-06-14T10:04:00Z", costUSD="lots"),       # not a number: ignored
    ])
    return str(tmp_path / "projects"), (u1, u2, u3)


def test_auto_uses_the_logged_price_where_there_is_one(root):
    path, (u1, u2, u3) = root
    total = run_json("daily", path, "--utc")[0]["totals"]
    assert total["cost_usd"] == pytest.approx(priced(u1) + 1.0 + priced(u3) + 0.25 + priced(u1))
    assert run_json("daily", path, "--utc", "--mode", "auto")[0]["totals"] == total      # the default


def test_calculate_prices_every_response_from_its_tokens(root):
    path, (u1, u2, u3) = root
    data = run_json(path, "--mode", "calculate")[0]
    assert data["by_model"][MODEL]["cost_usd"] == pytest.approx(priced(u1) + priced(u2) + priced(u3) + priced(u1))
    # no price data, and its logged price unused: unknown, and so is the total
    assert data["unpriced_models"] == ["mystery-model-9"] and data["totals"]["cost_usd"] is None


def test_display_counts_only_the_logged_prices(root):
    path, (u1, _, _) = root
    data = run_json("session", path, "--mode", "display")[0]
    assert data["totals"]["cost_usd"] == pytest.approx(priced(u1) + 1.0 + 0.25)
    assert data["unpriced_models"] == []


def test_debug_lists_the_responses_whose_prices_differ(root):
    path, (_, u2, _) = root
    code, out, err = run("daily", path, "--utc", "--debug")
    assert code == 0 and "Total" in out
    lines = err.splitlines()
    assert lines[0].startswith("ctxtui usage: debug: 1 response whose logged costUSD differs")
    assert "logged $1.000000" in lines[1] and f"calculated ${priced(u2):.6f}" in lines[1] and "r2" in lines[1]
    data, _ = run_json("daily", path, "--utc", "--debug")
    assert [(m["logged_usd"], m["model"]) for m in data["mismatches"]] == [(1.0, MODEL)]
    assert "mismatches" not in run_json("daily", path, "--utc")[0]


def test_debug_says_when_every_logged_price_matches(tmp_path):
    u = usage(inp=10, out=1)
    write_log(tmp_path / "projects" / "p" / "s.jsonl", [assistant("m1", "r1", u=u, costUSD=priced(u))])
    code, _, err = run(str(tmp_path / "projects"), "--debug")
    assert code == 0 and "no response's logged costUSD differs" in err


def test_a_hostile_request_id_in_debug_is_shown_as_text(tmp_path):
    u = usage(inp=10, out=1)
    write_log(tmp_path / "projects" / "p" / "s.jsonl", [assistant("m1", "r1\x1b]0;pwned\x07", u=u, costUSD=9.0)])
    code, _, err = run(str(tmp_path / "projects"), "--debug")
    assert code == 0 and "\x1b" not in err and "\x07" not in err and "pwned" in err


def test_a_bad_mode_is_refused(root):
    path, _ = root
    code, out, err = run("daily", path, "--mode", "guess")
    assert code == 2 and "invalid choice" in err and out == ""
    assert json.loads(run("daily", path, "--json")[1])["totals"]["requests"] == 5
