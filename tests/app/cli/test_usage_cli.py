"""`ctxtui usage`: the report, its JSON shape, grouping, pricing by bucket, paths and errors."""
from __future__ import annotations

import json

import pytest

from agent_core.pricing.cost import price_buckets
from app.cli.usage import main
from app.cli.main import main as ctxtui_main
from tests.app.cli.usage_helpers import run, run_json
from tests.log_helpers import MODEL, assistant, boundary, usage, user, write_log

BUCKET_KEYS = {"input_tokens", "output_tokens", "cache_write_5m_tokens", "cache_write_1h_tokens", "cache_read_tokens"}


@pytest.fixture
def projects(tmp_path):
    """Two projects, three sessions over two days, one compaction, one sub-agent log."""
    root = tmp_path / "projects"
    write_log(root / "-home-me-a" / "s-a1.jsonl", [
        user(session="s-a1"),
        assistant("m1", "r1", session="s-a1", u=usage(inp=100, out=10), block="thinking"),
        assistant("m1", "r1", session="s-a1", u=usage(inp=100, out=10)),
        boundary(120_000, session="s-a1", ts="2025-06-14T10:30:00Z"),
        assistant("m2", "r2", session="s-a1", u=usage(inp=200, out=20, read=5000), ts="2025-06-14T10:31:00Z"),
    ])
    write_log(root / "-home-me-a" / "s-a1" / "subagents" / "agent-x.jsonl", [
        assistant("m3", "r3", session="s-a1", sidechain=True, u=usage(inp=1000, out=1)),
    ])
    write_log(root / "-home-me-b" / "s-b1.jsonl", [
        assistant("m4", "r4", session="s-b1", model="claude-haiku-4-5-20251001", u=usage(inp=40, out=4),
                  ts="2025-06-15T09:00:00Z"),
        assistant("m5", "r5", session="s-b1", model="mystery-model-1", u=usage(inp=7, out=7),
                  ts="2025-06-15T09:01:00Z"),
    ])
    return root


def test_json_shape(projects):
    data, _ = run_json(str(projects))
    assert {"totals", "by_model", "sessions"} <= set(data)
    assert set(data["by_model"]) == {MODEL, "claude-haiku-4-5-20251001", "mystery-model-1"}
    for row in data["by_model"].values():
        assert BUCKET_KEYS | {"cost_usd"} <= set(row)
        assert all(isinstance(row[k], int) for k in BUCKET_KEYS)
    assert data["by_model"]["mystery-model-1"]["cost_usd"] is None       # unknown price, tokens kept
    assert data["by_model"]["mystery-model-1"]["input_tokens"] == 7
    assert isinstance(data["by_model"][MODEL]["cost_usd"], float)
    t = data["totals"]
    assert t["input_tokens"] == 100 + 200 + 1000 + 40 + 7
    assert t["output_tokens"] == 10 + 20 + 1 + 4 + 7
    assert t["cache_read_tokens"] == 5000
    assert t["requests"] == 5 and t["sessions"] == 2 and t["compactions"] == 1
    assert t["cost_usd"] is None and t["priced_cost_usd"] > 0
    assert data["unpriced_models"] == ["mystery-model-1"]
    sessions = {s["session_id"]: s for s in data["sessions"]}
    a1 = sessions["s-a1"]
    assert a1["project"] == "-home-me-a" and a1["subagent_requests"] == 1 and a1["requests"] == 3
    assert a1["compactions"] == [{"timestamp": "2025-06-14T10:30:00Z", "trigger": "auto", "layer": "compact",
                                  "tokens_before": 120_000, "tokens_after": 5200, "is_sidechain": False}]
    assert a1["last_context_tokens"] == 5200
    assert sessions["s-b1"]["cost_usd"] is None
    assert data["files"] == 3 and data["skipped_lines"] == 0


def test_one_hour_cache_write_costs_twice_input_and_five_minute_one_and_a_quarter(tmp_path):
    n = 100_000
    log = write_log(tmp_path / "p" / "s.jsonl", [
        assistant("in", "r", session="input", u={"input_tokens": n, "output_tokens": 0}),
        assistant("w1h", "r", session="write-1h", u={"input_tokens": 0, "output_tokens": 0,
                                                     "cache_creation_input_tokens": n,
                                                     "cache_creation": {"ephemeral_5m_input_tokens": 0,
                                                                        "ephemeral_1h_input_tokens": n}}),
        assistant("w5m", "r", session="write-5m", u={"input_tokens": 0, "output_tokens": 0,
                                                     "cache_creation_input_tokens": n,
                                                     "cache_creation": {"ephemeral_5m_input_tokens": n,
                                                                        "ephemeral_1h_input_tokens": 0}}),
        assistant("w", "r", session="write-unsplit", u={"input_tokens": 0, "output_tokens": 0,
                                                        "cache_creation_input_tokens": n}),
    ])
    data, _ = run_json(str(log))
    cost = {s["session_id"]: s["cost_usd"] for s in data["sessions"]}
    base = price_buckets(MODEL, {"input": n})
    assert base and cost["input"] == pytest.approx(base)
    assert cost["write-1h"] == pytest.approx(2 * base)
    assert cost["write-5m"] == pytest.approx(1.25 * base)
    assert cost["write-unsplit"] == pytest.approx(1.25 * base)    # no split: the API's default 5-minute TTL
    tokens = data["by_model"][MODEL]
    assert (tokens["cache_write_1h_tokens"], tokens["cache_write_5m_tokens"]) == (n, 2 * n)


def test_by_groupings_in_the_table(projects):
    code, out, _ = run(str(projects), "--by", "day", "--utc")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["Day", "Requests", "Input"]
    rows = {ln.split()[0]: ln.split() for ln in lines[2:] if ln[:4] == "2025"}
    assert set(rows) == {"2025-06-14", "2025-06-15"}
    assert rows["2025-06-14"][1:3] == ["3", "1,300"] and rows["2025-06-15"][1:3] == ["2", "47"]
    total = next(ln for ln in lines if ln.startswith("Total")).split()
    assert total[1:3] == ["5", "1,347"]
    assert total[-1].endswith("+?")                        # part of the cost is unknown

    code, out, _ = run(str(projects), "--by", "session")
    names = [ln.split()[0] for ln in out.splitlines()[2:] if ln.startswith("s-")]
    assert names == ["s-a1", "s-b1"]                       # oldest first

    code, out, _ = run(str(projects))                      # default: by model
    assert out.splitlines()[0].startswith("Model")
    row = next(ln for ln in out.splitlines() if ln.startswith("mystery-model-1")).split()
    assert row[1] == "1" and row[-1] == "unknown"
    assert "unknown price" in out and "mystery-model-1" in out
    # columns line up: every row as wide as the header's cost column ends
    body = [ln for ln in out.splitlines()[:-3] if ln and not ln.startswith("-")]
    assert len({len(ln) for ln in body}) == 1


def test_json_by_day_and_since(projects):
    data, _ = run_json(str(projects), "--utc")
    assert list(data["by_day"]) == ["2025-06-14", "2025-06-15"]
    data, _ = run_json(str(projects), "--utc", "--since", "2025-06-15")
    assert data["totals"]["requests"] == 2 and data["totals"]["compactions"] == 0
    assert set(data["by_model"]) == {"claude-haiku-4-5-20251001", "mystery-model-1"}
    data, _ = run_json(str(projects), "--utc", "--since", "20250616")
    assert data["totals"]["requests"] == 0 and data["sessions"] == []


def test_corrupt_lines_are_reported_on_stderr(tmp_path):
    log = write_log(tmp_path / "s.jsonl", [assistant("m1", "r1")], tail='{"broken\nnot json\n{"type":"assi')
    code, out, err = run(str(log), "--json")
    assert code == 0
    assert err.count("\n") == 1
    assert f"skipped 3 corrupt lines in 1 file; first: {log}:2" in err
    data = json.loads(out)
    assert data["skipped_lines"] == 3 and data["totals"]["requests"] == 1


def test_claude_config_dir_is_honoured(tmp_path, monkeypatch, projects):
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(projects.parent))
    monkeypatch.setenv("HOME", str(tmp_path / "nohome"))
    data, _ = run_json()
    assert data["totals"]["requests"] == 5
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "elsewhere"))
    code, out, err = run()
    assert code == 2 and str(tmp_path / "elsewhere" / "projects") in err and "CLAUDE_CONFIG_DIR" in err


def test_default_is_home_claude_projects(tmp_path, monkeypatch):
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    write_log(tmp_path / ".claude" / "projects" / "p" / "s.jsonl", [assistant("m1", "r1")])
    data, _ = run_json()
    assert data["totals"]["requests"] == 1


def test_ctxtui_sessions_folder_is_accepted(tmp_path):
    from agent_core.sessions.session_log import SessionLog
    from compaction.entry import assistant as a_entry

    state = tmp_path / "projects" / "-home-me-proj-1a2b3c4d"     # a workspace's state folder
    log = SessionLog.create(state, {"model": MODEL}, session_id="20250614T100000-abcdef")
    log.append_entry(a_entry("hi", response_id="msg_a", usage=usage(inp=10, out=5), model=MODEL))
    log.close()
    cc = write_log(tmp_path / "cc" / "s.jsonl", [assistant("m1", "r1", u=usage(inp=1, out=1))])
    data, _ = run_json(str(state / "sessions"), str(cc))
    sessions = {s["session_id"]: s for s in data["sessions"]}
    assert sessions["20250614T100000-abcdef"]["source"] == "ctxtui"
    assert sessions["20250614T100000-abcdef"]["project"] == "-home-me-proj-1a2b3c4d"
    assert sessions["sess-1"]["source"] == "claude_code"
    assert data["totals"]["input_tokens"] == 11


def test_two_ctxtui_sessions_with_the_same_response_ids_are_both_counted(tmp_path):
    """The offline demo's response ids come from the request, so two sessions that start alike
    repeat them: each session's responses are its own (the second session was lost: 5 requests
    where there were 10)."""
    from agent_core.sessions.session_log import SessionLog
    from compaction.entry import assistant as a_entry

    state = tmp_path / "projects" / "-home-me-proj-1a2b3c4d"
    for sid in ("20250614T100000-abcdef", "20250614T110000-fedcba"):
        log = SessionLog.create(state, {"model": MODEL}, session_id=sid)
        for i in range(3):
            log.append_entry(a_entry(f"hi {i}", response_id=f"msg_demo_{i}", usage=usage(inp=10, out=5),
                                     model=MODEL))
        log.close()
    data, _ = run_json(str(state / "sessions"))
    assert data["totals"]["requests"] == 6 and data["totals"]["sessions"] == 2
    assert data["totals"]["input_tokens"] == 60


def test_same_path_twice_counts_once(projects):
    data, _ = run_json(str(projects), str(projects / "-home-me-a" / "s-a1.jsonl"))
    assert data["totals"]["requests"] == 5 and data["files"] == 3


@pytest.mark.parametrize("argv, needle", [
    (["/no/such/path.jsonl"], "no such file or folder: /no/such/path.jsonl"),
    (["--by", "week"], "invalid choice"),
    (["--since", "yesterday"], "not a date"),
    (["--frobnicate"], "unrecognized arguments"),
])
def test_bad_usage_exits_2_with_a_message(argv, needle):
    code, out, err = run(*argv)
    assert code == 2 and needle in err and out == ""


def test_help_lists_every_flag(capsys):
    assert main(["--help"]) == 0
    text = capsys.readouterr().out
    for flag in ("--json", "--by", "--since", "--utc", "PATH", "CLAUDE_CONFIG_DIR", "cost_usd",
                 "cache_write_1h_tokens", "exit codes", "--mode", "--debug", "--color"):
        assert flag in text
    # the synopsis names the reports, and ctxtui's logs are where they live: the state folder
    assert text.startswith("usage: ctxtui usage [daily|weekly|monthly|session|blocks] [options] [PATH ...]")
    assert ".ctxtui/" not in text and "~/.local/state/ctxtui" in text


def test_wired_as_ctxtui_usage(projects, capsys):
    assert ctxtui_main(["usage", str(projects), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["totals"]["requests"] == 5


def test_usage_never_loads_textual_or_the_sdk(projects):
    import subprocess
    import sys

    code = ("import sys, io; from app.cli.main import main; "
            f"rc = main(['usage', {str(projects)!r}, '--json']); "
            "bad = [m for m in ('textual', 'rich', 'anthropic') if m in sys.modules]; "
            "sys.exit(rc or (3 if bad else 0))")
    from pathlib import Path

    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       cwd=Path(__file__).resolve().parents[3])
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["totals"]["requests"] == 5


async def test_a_summary_call_is_logged_as_its_own_record_and_priced_from_it(tmp_path):
    """A compaction summary through the fake server: the session log keeps the call (model, purpose,
    usage) as a `model_call` record, and `ctxtui usage --json` prices it under its purpose."""
    from agent_core.pricing.cost import usage_buckets
    from tests.agent_helpers import MODEL as SESSION_MODEL, collect, fake_agent, make_workspace
    from tests.fake_anthropic import FakeAnthropic, echo_responder, reply

    ws = make_workspace(tmp_path)
    with FakeAnthropic([reply("alpha " * 2000), reply("beta " * 2000)], responder=echo_responder) as fake:
        agent = fake_agent(ws, fake.base_url)
        await collect(agent.run("first"))
        await collect(agent.run("second"))
        await collect(agent.compact("keep the plan"))
        await agent.aclose()
    path = agent.session.path
    lines = [json.loads(ln) for ln in path.read_text().splitlines()]
    calls = [ln["event"] for ln in lines if ln.get("t") == "event" and ln["event"].get("type") == "model_call"]
    assert [c["purpose"] for c in calls] == ["main", "main", "compaction"]
    summary = calls[-1]
    assert summary["model"] == SESSION_MODEL and summary["message_id"] and summary["usage"]["output_tokens"] > 0

    data, _ = run_json(str(path))
    comp = data["by_purpose"]["compaction"]
    b = usage_buckets(summary["usage"])
    assert comp["requests"] == 1
    assert {k: comp[f"{k}_tokens"] for k in b} == b
    assert comp["cost_usd"] == pytest.approx(price_buckets(SESSION_MODEL, b), abs=1e-6)
    assert data["by_purpose"]["main"]["requests"] == 2 and data["totals"]["requests"] == 3
    assert data["by_model"][SESSION_MODEL]["requests"] == 3
    # the session's own cost book agrees with the report
    assert agent.cost.by_purpose()["compaction"]["cost_usd"] == pytest.approx(comp["cost_usd"], abs=1e-6)


# ---- where Claude Code's logs are -----------------------------------------------------------------

def _one_log(projects, name, out):
    write_log(projects / "-p" / f"{name}.jsonl", [assistant(f"m-{name}", f"r-{name}", session=name,
                                                            u=usage(inp=100, out=out))])


def test_both_default_folders_are_read(monkeypatch, tmp_path):
    """Newer Claude Code writes to ~/.config/claude (XDG_CONFIG_HOME/claude), older to ~/.claude."""
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    _one_log(tmp_path / "config" / "claude" / "projects", "new", 7)
    _one_log(tmp_path / "home" / ".claude" / "projects", "old", 5)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    data, _ = run_json("session")
    assert sorted(s["output_tokens"] for s in data["sessions"]) == [5, 7]


def test_claude_config_dir_takes_a_comma_list(monkeypatch, tmp_path):
    _one_log(tmp_path / "a" / "projects", "a", 3)
    _one_log(tmp_path / "b" / "projects", "b", 4)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", f"{tmp_path / 'a'},{tmp_path / 'b'}")
    data, _ = run_json("session")
    assert sorted(s["output_tokens"] for s in data["sessions"]) == [3, 4]


def test_no_projects_folder_says_where_it_looked(monkeypatch, tmp_path):
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", f"{tmp_path / 'x'},{tmp_path / 'y'}")
    code, out, err = run("session")
    assert code == 2 and out == ""
    assert str(tmp_path / "x" / "projects") in err and str(tmp_path / "y" / "projects") in err
    assert "CLAUDE_CONFIG_DIR" in err


def test_a_sessions_last_activity_is_its_last_response(tmp_path):
    """A compaction boundary after the last response is not activity of its own."""
    log = write_log(tmp_path / "p" / "s.jsonl", [assistant("m1", "r1", ts="2025-06-14T10:00:00Z"),
                                                 boundary(50_000, ts="2025-06-14T11:00:00Z")])
    [row] = run_json("session", str(log))[0]["sessions"]
    assert (row["first_timestamp"], row["last_timestamp"]) == ("2025-06-14T10:00:00Z", "2025-06-14T10:00:00Z")
    assert [c["timestamp"] for c in row["compactions"]] == ["2025-06-14T11:00:00Z"]     # still listed
