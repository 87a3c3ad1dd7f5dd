"""`ctxtui usage daily|weekly|monthly|session|blocks` against hand-computed logs: period boundaries
in non-UTC zones, inclusive --since/--until, --breakdown, 5-hour blocks, the compact table and the
single corrupt-lines warning."""
from __future__ import annotations


import pytest

from app.cli.usage import main
from agent_core.pricing.cost import price_buckets, usage_buckets
from tests.app.cli.usage_helpers import run, run_json as usage_json
from tests.log_helpers import MODEL, assistant, usage, write_log

TOKEN_FIELDS = ("input_tokens", "output_tokens", "cache_write_5m_tokens", "cache_write_1h_tokens",
                "cache_read_tokens", "total_tokens", "requests")


def run_json(*argv):
    return usage_json(*argv)[0]


def log_of(tmp_path, stamps_and_out, name="p/s.jsonl", model=MODEL, **kw):
    """One response per (UTC timestamp, output tokens), input 100 each."""
    session = name.rsplit("/", 1)[-1].removesuffix(".jsonl")
    recs = [assistant(f"m{i}-{name}", f"r{i}", ts=ts, model=model, session=session,
                      u=usage(inp=100, out=out, **kw))
            for i, (ts, out) in enumerate(stamps_and_out)]
    return write_log(tmp_path / "projects" / name, recs)


def outputs(data):
    return {r["period"]: r["output_tokens"] for r in data["rows"]}


# ---- week and month boundaries in a time zone -----------------------------------------------------

def test_week_boundary_in_los_angeles(tmp_path):
    # 2025-06-16 is a Monday. 06:30Z is Sunday 23:30 in Los Angeles (PDT, UTC-7); 07:30Z is Monday 00:30.
    log_of(tmp_path, [("2025-06-16T06:30:00Z", 1), ("2025-06-16T07:30:00Z", 2)])
    root = str(tmp_path / "projects")
    assert outputs(run_json("weekly", root, "--timezone", "America/Los_Angeles")) == {"2025-06-09": 1,
                                                                                        "2025-06-16": 2}
    assert outputs(run_json("weekly", root, "--timezone", "UTC")) == {"2025-06-16": 3}
    # weeks from Sunday: both fall in the week of Sunday 2025-06-15, in Los Angeles
    assert outputs(run_json("weekly", root, "--timezone", "America/Los_Angeles",
                            "--start-of-week", "sunday")) == {"2025-06-15": 3}


def test_month_end_in_tokyo_and_los_angeles(tmp_path):
    # Tokyo is UTC+9: 14:30Z on June 30 is 23:30 there, 15:30Z is already July 1st.
    # Los Angeles is UTC-7: 2025-07-01T06:30Z is still June 30 there.
    log_of(tmp_path, [("2025-06-30T14:30:00Z", 1), ("2025-06-30T15:30:00Z", 2), ("2025-07-01T06:30:00Z", 4)])
    root = str(tmp_path / "projects")
    assert outputs(run_json("monthly", root, "--timezone", "Asia/Tokyo")) == {"2025-06": 1, "2025-07": 6}
    assert outputs(run_json("monthly", root, "--timezone", "America/Los_Angeles")) == {"2025-06": 7}
    assert outputs(run_json("monthly", root, "--utc")) == {"2025-06": 3, "2025-07": 4}
    assert outputs(run_json("daily", root, "--timezone", "Asia/Tokyo")) == {"2025-06-30": 1, "2025-07-01": 6}


def test_since_and_until_are_inclusive_days_in_the_zone(tmp_path):
    log_of(tmp_path, [("2025-06-14T12:00:00Z", 1), ("2025-06-15T12:00:00Z", 2), ("2025-06-16T12:00:00Z", 4),
                      ("2025-06-16T23:30:00Z", 8)])    # June 17th in Tokyo
    root = str(tmp_path / "projects")
    assert outputs(run_json("daily", root, "--utc", "--since", "2025-06-15", "--until", "2025-06-15")) == \
        {"2025-06-15": 2}
    data = run_json("daily", root, "--utc", "--since", "2025-06-14", "--until", "2025-06-16")
    assert data["totals"]["output_tokens"] == 15
    data = run_json("daily", root, "--timezone", "Asia/Tokyo", "--until", "2025-06-16")
    assert data["totals"]["output_tokens"] == 7
    assert run_json("session", root, "--utc", "--since", "2025-06-17")["sessions"] == []


def test_breakdown_rows_sum_to_their_period_and_to_the_totals(tmp_path):
    log_of(tmp_path, [("2025-06-14T10:00:00Z", 10), ("2025-06-14T11:00:00Z", 20)], name="a/s1.jsonl")
    log_of(tmp_path, [("2025-06-14T12:00:00Z", 40), ("2025-06-15T12:00:00Z", 80)], name="b/s2.jsonl",
           model="claude-haiku-4-5-20251001", read=1000)
    data = run_json("daily", str(tmp_path / "projects"), "--utc", "--breakdown")
    for row in data["rows"]:
        for f in TOKEN_FIELDS:
            assert sum(b[f] for b in row["breakdown"].values()) == row[f]
        assert sum(b["cost_usd"] for b in row["breakdown"].values()) == pytest.approx(row["cost_usd"])
    day = {r["period"]: r for r in data["rows"]}["2025-06-14"]
    assert set(day["breakdown"]) == {MODEL, "claude-haiku-4-5-20251001"}
    assert day["breakdown"][MODEL]["output_tokens"] == 30
    for f in TOKEN_FIELDS:
        assert sum(r[f] for r in data["rows"]) == data["totals"][f]
    expected = price_buckets(MODEL, usage_buckets(usage(inp=200, out=30)))
    assert day["breakdown"][MODEL]["cost_usd"] == pytest.approx(expected)


def test_session_rows_name_project_models_and_activity(tmp_path):
    log_of(tmp_path, [("2025-06-14T10:00:00Z", 1), ("2025-06-14T12:30:00Z", 2)], name="-home-me-app/s1.jsonl")
    log_of(tmp_path, [("2025-06-15T09:00:00Z", 4)], name="-home-me-web/s2.jsonl")
    root = str(tmp_path / "projects")
    data = run_json("session", root)
    (s,) = [s for s in data["sessions"] if s["project"] == "-home-me-app"]
    assert s["models"] == [MODEL]
    assert (s["first_timestamp"], s["last_timestamp"]) == ("2025-06-14T10:00:00Z", "2025-06-14T12:30:00Z")
    code, out, _ = run("session", root, "--utc")
    assert code == 0 and "-home-me-app" in out and "2025-06-14 12:30" in out and "sonnet-4-5" in out
    only = run_json("session", root, "--project", "web")
    assert [s["project"] for s in only["sessions"]] == ["-home-me-web"]
    assert only["totals"]["output_tokens"] == 4


# ---- --order ------------------------------------------------------------------------------------

def test_order_desc_puts_the_newest_row_first_in_every_report_and_keeps_the_totals(tmp_path):
    log_of(tmp_path, [("2025-06-14T10:00:00Z", 1), ("2025-06-14T11:00:00Z", 2)], name="a/s1.jsonl")
    log_of(tmp_path, [("2025-06-16T09:00:00Z", 4), ("2025-06-16T20:00:00Z", 8)], name="b/s2.jsonl",
           model="claude-haiku-4-5-20251001")
    root = str(tmp_path / "projects")
    now = ("--now", "2025-06-20T00:00:00Z")
    for report, key, field in (("daily", "rows", "period"), ("monthly", "rows", "period"),
                               ("session", "sessions", "session_id"), ("blocks", "blocks", "start")):
        extra = now if report == "blocks" else ()
        asc = run_json(report, root, "--utc", "--breakdown", *extra)
        desc = run_json(report, root, "--utc", "--breakdown", "--order", "desc", *extra)
        assert [r[field] for r in desc[key]] == [r[field] for r in reversed(asc[key])], report
        assert desc[key] == list(reversed(asc[key])) and desc["totals"] == asc["totals"], report
        assert asc == run_json(report, root, "--utc", "--breakdown", "--order", "asc", *extra)   # the default
    days = [r["period"] for r in run_json("daily", root, "--utc", "--order", "desc")["rows"]]
    assert days == ["2025-06-16", "2025-06-14"]
    code, out, _ = run("daily", root, "--utc", "--order", "desc", "--breakdown")
    assert code == 0
    lines = out.splitlines()
    newest, oldest = (next(i for i, line in enumerate(lines) if line.lstrip("│ ").startswith(d))
                      for d in ("2025-06-16", "2025-06-14"))
    assert newest < oldest
    # a day's per-model rows stay under it: the haiku row right after 06-16, before 06-14
    assert any("haiku" in line for line in lines[newest + 1:oldest])
    blocks = [b for b in run_json("blocks", root, "--order", "desc", *now)["blocks"]]
    assert blocks[0]["start"] == "2025-06-16T20:00:00Z" and any(b["gap"] for b in blocks)


# ---- --last ---------------------------------------------------------------------------------------

def test_last_keeps_the_most_recent_periods_sessions_or_blocks_and_their_totals(tmp_path):
    log_of(tmp_path, [("2025-06-10T10:00:00Z", 1), ("2025-06-12T10:00:00Z", 2)], name="a/s1.jsonl")
    log_of(tmp_path, [("2025-06-14T10:00:00Z", 4), ("2025-06-14T20:00:00Z", 8)], name="b/s2.jsonl")
    root = str(tmp_path / "projects")
    data = run_json("daily", root, "--utc", "--last", "2")
    assert outputs(data) == {"2025-06-12": 2, "2025-06-14": 12}
    since = run_json("daily", root, "--utc", "--since", "2025-06-12")
    assert data["totals"] == since["totals"] and data["totals"]["output_tokens"] == 14    # a --since, in effect
    assert outputs(run_json("monthly", root, "--utc", "--last", "1")) == {"2025-06": 15}
    assert outputs(run_json("daily", root, "--utc", "--last", "9")) == {"2025-06-10": 1, "2025-06-12": 2,
                                                                         "2025-06-14": 12}
    desc = run_json("daily", root, "--utc", "--last", "2", "--order", "desc")
    assert [r["period"] for r in desc["rows"]] == ["2025-06-14", "2025-06-12"]
    sessions = run_json("session", root, "--last", "1")
    assert [s["session_id"] for s in sessions["sessions"]] == ["s2"] and sessions["totals"]["output_tokens"] == 12
    blocks = run_json("blocks", root, "--last", "1", "--now", "2025-06-20T00:00:00Z")
    assert [(b["start"], b["output_tokens"]) for b in blocks["blocks"]] == [("2025-06-14T20:00:00Z", 8)]
    code, out, _ = run("daily", root, "--utc", "--last", "1")
    total = next(line for line in out.splitlines() if line.startswith("Total"))
    assert code == 0 and "2025-06-10" not in out and total.split()[1] == "2"     # the 2 requests of 06-14
    for bad in ("0", "-2", "two"):
        code, out, err = run("daily", root, "--last", bad)
        assert code == 2 and "not a count" in err and out == ""


# ---- --instances ---------------------------------------------------------------------------------

def test_instances_show_each_projects_periods_apart_and_add_up_to_the_totals(tmp_path):
    log_of(tmp_path, [("2025-06-14T10:00:00Z", 1), ("2025-06-15T10:00:00Z", 2)], name="-home-me-app/s1.jsonl")
    log_of(tmp_path, [("2025-06-15T11:00:00Z", 4)], name="-home-me-app/s3.jsonl")
    log_of(tmp_path, [("2025-06-15T12:00:00Z", 8)], name="-home-me-web/s2.jsonl", model="claude-haiku-4-5-20251001")
    log_of(tmp_path, [("2025-06-15T13:00:00Z", 16)], name="evil\x1b[2J/s4.jsonl")
    root = str(tmp_path / "projects")
    plain = run_json("daily", root, "--utc")
    data = run_json("daily", root, "--utc", "--instances")
    assert "rows" not in data and list(data["projects"]) == sorted(data["projects"])
    assert {p: {r["period"]: r["output_tokens"] for r in rows} for p, rows in data["projects"].items()} == {
        "-home-me-app": {"2025-06-14": 1, "2025-06-15": 6}, "-home-me-web": {"2025-06-15": 8},
        "evil\x1b[2J": {"2025-06-15": 16}}
    for f in TOKEN_FIELDS:
        assert sum(r[f] for rows in data["projects"].values() for r in rows) == data["totals"][f] == plain["totals"][f]
    assert data["totals"] == plain["totals"]
    desc = run_json("daily", root, "--utc", "--instances", "--order", "desc")
    assert [r["period"] for r in desc["projects"]["-home-me-app"]] == ["2025-06-15", "2025-06-14"]
    monthly = run_json("monthly", root, "--utc", "--instances")
    assert monthly["projects"]["-home-me-app"][0]["output_tokens"] == 7
    code, out, _ = run("daily", root, "--utc", "--instances")
    assert code == 0 and "\x1b" not in out
    lines = out.splitlines()
    app = next(i for i, line in enumerate(lines) if line.startswith("-home-me-app"))
    assert lines[app + 1].startswith("  2025-06-14") and lines[app + 2].startswith("  2025-06-15")
    assert lines[app].split()[2] == "3"            # the project's row: its sum, 3 requests
    code, _, err = run("session", root, "--instances")
    assert code == 2 and "unrecognized arguments" in err


# ---- 5-hour blocks --------------------------------------------------------------------------------

def test_a_block_spans_midnight_and_a_gap_starts_a_new_one(tmp_path):
    log_of(tmp_path, [("2025-06-14T22:10:00Z", 1), ("2025-06-14T23:50:00Z", 2), ("2025-06-15T01:30:00Z", 4),
                      ("2025-06-15T02:59:00Z", 8),      # still the block 22:00 -> 03:00
                      ("2025-06-15T03:05:00Z", 16),     # the next one, 03:00 -> 08:00, no gap
                      ("2025-06-15T10:20:00Z", 32)])    # after a gap 08:00 -> 10:00
    data = run_json("blocks", str(tmp_path / "projects"), "--now", "2025-06-20T00:00:00Z")
    got = [(b["start"], b["end"], b["gap"], b.get("output_tokens")) for b in data["blocks"]]
    assert got == [("2025-06-14T22:00:00Z", "2025-06-15T03:00:00Z", False, 15),
                   ("2025-06-15T03:00:00Z", "2025-06-15T08:00:00Z", False, 16),
                   ("2025-06-15T08:00:00Z", "2025-06-15T10:00:00Z", True, None),
                   ("2025-06-15T10:00:00Z", "2025-06-15T15:00:00Z", False, 32)]
    assert data["active"] is None
    code, out, _ = run("blocks", str(tmp_path / "projects"), "--timezone", "Asia/Tokyo",
                       "--now", "2025-06-20T00:00:00Z")
    assert "2025-06-15 07:00" in out or "06-15 07:00" in out        # 22:00Z shown in Tokyo time
    assert "gap 2h00m" in out and "no active block" in out


def test_the_active_block_shows_time_left_burn_rate_and_projection(tmp_path):
    # 10:15 and 10:45 (UTC), 1,000 + 2,000 tokens (input only); now 11:15: 60 minutes since the first
    # activity -> 50 tokens/min; 3h45m (225 min) left -> 3,000 + 50 * 225 = 14,250 at the end.
    write_log(tmp_path / "projects" / "p" / "s.jsonl", [
        assistant("a", "1", ts="2025-06-14T10:15:00Z", u=usage(inp=1000, out=0)),
        assistant("b", "2", ts="2025-06-14T10:45:00Z", u=usage(inp=2000, out=0)),
    ])
    root = str(tmp_path / "projects")
    data = run_json("blocks", root, "--now", "2025-06-14T11:15:00Z", "--token-limit", "10000")
    a = data["active"]
    assert a["seconds_left"] == 225 * 60
    assert a["tokens"] == 3000 and a["tokens_per_minute"] == pytest.approx(50)
    assert a["projected_tokens"] == 14_250
    assert a["projected_limit_pct"] == pytest.approx(142.5)
    cost = price_buckets(MODEL, usage_buckets(usage(inp=3000, out=0)))
    assert a["cost_per_hour"] == pytest.approx(cost)                       # one hour so far
    assert a["projected_cost_usd"] == pytest.approx(cost * (60 + 225) / 60)
    assert data["blocks"][0]["active"] is True and data["blocks"][0]["limit_pct"] == pytest.approx(30)
    code, out, _ = run("blocks", root, "--now", "2025-06-14T11:15:00Z", "--token-limit", "10000", "--utc")
    assert "active, 3h45m left" in out and "14,250 tokens" in out and "over it" in out


def test_blocks_active_and_recent_choose_the_blocks_shown(tmp_path):
    """Blocks on 06-01, 06-10 and 06-12, and one active on 06-14 at 11:15: --active shows that one
    (with its projection), --recent the blocks that ended in the last three days and the active one."""
    write_log(tmp_path / "projects" / "p" / "s.jsonl", [
        assistant("a", "1", ts="2025-06-01T08:00:00Z", u=usage(inp=100, out=0)),
        assistant("b", "2", ts="2025-06-10T08:00:00Z", u=usage(inp=200, out=0)),
        assistant("c", "3", ts="2025-06-12T08:00:00Z", u=usage(inp=400, out=0)),
        assistant("d", "4", ts="2025-06-14T10:15:00Z", u=usage(inp=1000, out=0)),
    ])
    root, now = str(tmp_path / "projects"), ("--now", "2025-06-14T11:15:00Z")
    starts = lambda data: [b["start"] for b in data["blocks"] if not b["gap"]]   # noqa: E731
    every = run_json("blocks", root, *now)
    assert starts(every) == ["2025-06-01T08:00:00Z", "2025-06-10T08:00:00Z", "2025-06-12T08:00:00Z",
                             "2025-06-14T10:00:00Z"]
    active = run_json("blocks", root, "--active", *now)
    assert starts(active) == ["2025-06-14T10:00:00Z"] and active["blocks"][0]["input_tokens"] == 1000
    assert active["active"] == every["active"] and active["active"]["tokens"] == 1000
    recent = run_json("blocks", root, "--recent", *now)
    assert starts(recent) == ["2025-06-12T08:00:00Z", "2025-06-14T10:00:00Z"]    # 06-12 ended 13:00, < 3 days ago
    code, out, _ = run("blocks", root, "--active", "--utc", *now)
    assert code == 0 and "active, 3h45m left" in out and "2025-06-12" not in out and "2025-06-01" not in out
    total = next(line for line in out.splitlines() if line.startswith("Total"))
    assert "1,000" in total and "1,700" not in total             # the total of the block shown
    code, out, _ = run("blocks", root, "--active", "--utc", "--now", "2025-06-20T00:00:00Z")
    assert code == 0 and "no active block (the last one ended 2025-06-14 15:00)" in out
    code, _, err = run("blocks", root, "--active", "--recent", *now)
    assert code == 2 and "not allowed with" in err


def test_session_length_sets_how_long_a_block_lasts(tmp_path):
    """Activity at 10:15, 11:30 and 13:10: one 5-hour block (10:00-15:00); with 2-hour blocks,
    10:00-12:00 holds the first two and 13:00-15:00 the third, after a one-hour gap."""
    write_log(tmp_path / "projects" / "p" / "s.jsonl", [
        assistant("a", "1", ts="2025-06-14T10:15:00Z", u=usage(inp=100, out=0)),
        assistant("b", "2", ts="2025-06-14T11:30:00Z", u=usage(inp=200, out=0)),
        assistant("c", "3", ts="2025-06-14T13:10:00Z", u=usage(inp=400, out=0)),
    ])
    root, now = str(tmp_path / "projects"), ("--now", "2025-06-14T13:40:00Z")
    five = run_json("blocks", root, *now)
    assert [(b["start"], b["end"], b["input_tokens"]) for b in five["blocks"]] == [
        ("2025-06-14T10:00:00Z", "2025-06-14T15:00:00Z", 700)]
    two = run_json("blocks", root, "--session-length", "2", *now)
    assert [(b["start"], b["end"], b.get("input_tokens")) for b in two["blocks"]] == [
        ("2025-06-14T10:00:00Z", "2025-06-14T12:00:00Z", 300), ("2025-06-14T12:00:00Z", "2025-06-14T13:00:00Z", None),
        ("2025-06-14T13:00:00Z", "2025-06-14T15:00:00Z", 400)]
    assert two["active"]["seconds_left"] == 80 * 60 and two["active"]["tokens"] == 400
    code, out, _ = run("blocks", root, "--session-length", "2", "--utc", *now)
    assert code == 0 and "active, 1h20m left" in out and "gap 1h00m" in out
    for bad in ("0", "-1", "25", "five"):
        code, out, err = run("blocks", root, "--session-length", bad)
        assert code == 2 and "not a block length" in err and out == ""


def test_token_limit_max_is_the_biggest_finished_block(tmp_path):
    write_log(tmp_path / "projects" / "p" / "s.jsonl", [
        assistant("a", "1", ts="2025-06-13T10:00:00Z", u=usage(inp=5000, out=0)),
        assistant("b", "2", ts="2025-06-14T10:15:00Z", u=usage(inp=1000, out=0)),
    ])
    data = run_json("blocks", str(tmp_path / "projects"), "--now", "2025-06-14T11:15:00Z", "--token-limit", "max")
    assert data["token_limit"] == 5000
    assert [b["limit_pct"] for b in data["blocks"] if not b["gap"]] == [100, 20]


# ---- tables and warnings --------------------------------------------------------------------------

def test_compact_table_at_80_columns_cuts_no_digit(tmp_path, monkeypatch):
    # 200 responses of 9,876,543 cache-read tokens each (one response can report at most
    # MAX_REQUEST_TOKENS): the totals are as wide as a real heavy month's
    stamps = [(f"2025-06-{14 + i // 100}T10:{(i % 100) // 60:02d}:{i % 60:02d}Z", 0) for i in range(200)]
    stamps[0], stamps[-1] = (stamps[0][0], 123_456), (stamps[-1][0], 7)
    log_of(tmp_path, stamps, name="-home-me-a-long"
           "-project-name/0b1c2d3e-aaaa-bbbb-cccc-0123456789ab.jsonl", read=9_876_543, write=45_678)
    root = str(tmp_path / "projects")
    data = run_json("session", root, "--utc")
    monkeypatch.setenv("COLUMNS", "80")
    for report in ("daily", "weekly", "monthly", "session", "blocks"):
        code, out, err = run(report, root, "--utc", "--breakdown", "--now", "2025-06-20T00:00:00Z") \
            if report == "blocks" else run(report, root, "--utc", "--breakdown")
        assert code == 0, err
        lines = out.splitlines()
        table = lines[:lines.index("")]
        assert max(len(ln) for ln in table) <= 80, report
        assert "abbreviated" in out
    code, out, _ = run("daily", root, "--utc")
    total = next(ln for ln in out.splitlines() if ln.startswith("Total")).split()
    assert f"${data['totals']['cost_usd']:,.2f}" in total            # dollars exact
    assert "1.98B" in total                                          # 200 x 9,876,543 cache read
    assert "123K" in total                                           # 123,463 output
    monkeypatch.setenv("COLUMNS", "200")
    code, out, _ = run("daily", root, "--utc")
    assert "1,975,308,600" in out and "abbreviated" not in out       # wide: exact


def test_corrupt_lines_make_one_warning_line(tmp_path):
    a = write_log(tmp_path / "projects" / "p" / "a.jsonl", [assistant("m1", "r1")], tail="not json\n{\"x\n")
    write_log(tmp_path / "projects" / "p" / "b.jsonl", [assistant("m2", "r2"), "garbage"])
    write_log(tmp_path / "projects" / "p" / "c.jsonl", [assistant("m3", "r3")])
    code, out, err = run("daily", str(tmp_path / "projects"))
    assert code == 0
    assert err.splitlines() == [f"ctxtui usage: skipped 3 corrupt lines in 2 files; first: {a}:2"]


@pytest.mark.parametrize("argv, needle", [
    (["daily", "--timezone", "Mars/Olympus"], "unknown time zone 'Mars/Olympus'"),
    (["daily", "--timezone", "../../etc/passwd"], "unknown time zone"),
    (["weekly", "--start-of-week", "someday"], "not a weekday"),
    (["blocks", "--token-limit", "lots"], "not a token limit"),
    (["blocks", "--token-limit", "0"], "not a token limit"),
    (["daily", "--until", "june"], "not a date"),
    (["monthly", "--by", "day"], "unrecognized arguments"),
    (["daily", "--order", "newest"], "invalid choice"),
])
def test_bad_report_options_exit_2_with_a_message(tmp_path, argv, needle):
    log_of(tmp_path, [("2025-06-14T10:00:00Z", 1)])
    code, out, err = run(*argv[:1], str(tmp_path / "projects"), *argv[1:])
    assert code == 2 and needle in err and out == ""


def test_report_help_lists_its_options(capsys):
    assert main(["blocks", "--help"]) == 0
    text = capsys.readouterr().out
    for flag in ("--token-limit", "--breakdown", "--timezone", "--until", "--project", "--order", "--active",
                 "--recent", "--session-length", "--last", "5-hour"):
        assert flag in text


def test_start_up_loads_only_what_the_report_uses(tmp_path):
    """`ctxtui usage --help` loads no pricing data, Textual, SDK, asyncio, config or compaction
    engine (its private-folder helper, for the saved report state, is all of it that loads); a
    report over Claude Code's logs at most genai-prices (to price), not the rest."""
    import subprocess
    import sys
    from pathlib import Path

    log_of(tmp_path, [("2025-06-14T10:00:00Z", 1)])
    heavy = ("textual", "rich", "anthropic", "asyncio", "agent_core.sessions", "agent_core.config")
    code = ("import sys, io, contextlib; from app.cli.main import main\n"
            "with contextlib.redirect_stdout(io.StringIO()): rc = main(sys.argv[1:])\n"
            "engine = [m for m in sys.modules if m.startswith('compaction.') and m != 'compaction.private_dir']\n"
            f"print(rc, *[m for m in {heavy + ('genai_prices',)!r} if m in sys.modules], *engine)")
    root = Path(__file__).resolve().parents[3]

    def loaded(*argv):
        r = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=60, cwd=root)
        assert r.returncode == 0, r.stderr
        rc, *mods = r.stdout.split()
        assert rc == "0"
        return set(mods)

    assert loaded("usage", "--help") == set()
    # pricing may load genai-prices (not when its rates are cached: test_rates_cache.py), which
    # brings its HTTP client and so asyncio; nothing else heavy comes with a report
    assert loaded("usage", "daily", str(tmp_path / "projects"), "--json", "--utc") <= {"genai_prices", "asyncio"}


# ---- prices by date -------------------------------------------------------------------------------

def test_each_day_is_priced_at_its_own_prices(tmp_path):
    """The same 302K-token Opus 4.6 request on 2026-03-01 (long-context premium) and 2026-06-01."""
    u = usage(inp=2_000, out=1_000, read=300_000)
    recs = [assistant("m1", "r1", ts="2026-03-01T12:00:00Z", model="claude-opus-4-6", u=u),
            assistant("m2", "r2", ts="2026-06-01T12:00:00Z", model="claude-opus-4-6", u=u)]
    write_log(tmp_path / "projects" / "p" / "s.jsonl", recs)
    rows = run_json("daily", str(tmp_path / "projects"), "--timezone", "UTC")["rows"]
    days = {r["period"]: r["cost_usd"] for r in rows}
    b = usage_buckets(u)
    assert days["2026-03-01"] == pytest.approx(price_buckets("claude-opus-4-6", b, 1772366400.0), abs=1e-4)
    assert days["2026-06-01"] == pytest.approx(price_buckets("claude-opus-4-6", b, 1780315200.0), abs=1e-4)
    assert days["2026-03-01"] > 1.9 * days["2026-06-01"]
