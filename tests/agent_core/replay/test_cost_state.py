"""Claude Code's cost-state record (2.1.328) as replay's recorded figure, and `predict_cost`.

The fixture `data/claude_code_2_1_328.jsonl` is a real Claude Code 2.1.328 log, trimmed: the binary
run headless against the project's fake API (tests.fake_anthropic), one prompt at a time — read
alpha.txt, read beta.txt, a recall of alpha.txt, `/compact`, a recall of beta.txt, read gamma.txt —
with the large records (`api-request-shape`, prompt snapshots, listings) left out, tool results and
re-attached files cut to six lines, and the paths moved to /home/user. It keeps what replay reads:
the user and assistant records, the `compact_boundary` and its summary, and the one `cost-state`
record at the end, whose $0.22924905 is what the fake server's usage of all nine calls cost —
the `/compact` summary call included, which has no assistant record.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_core.logs.claude_code import is_candidate
from agent_core.logs.cost_state import cost_state_of
from agent_core.logs.reader import LogReader
from agent_core.logs.records import UsageRecord
from agent_core.logs.trajectory_read import read_trajectories
from agent_core.pricing.pricer import Pricer
from agent_core.replay.options import ReplayOptions
from agent_core.replay.predict import predict_cost
from agent_core.replay.recorded import cost_state_usd
from agent_core.replay.runner import run_replay

FIXTURE = Path(__file__).parent / "data" / "claude_code_2_1_328.jsonl"
CLAUDE_CODE_TOTAL = 0.22924905          # the record's totalCostUSD = the fake server's usage, priced


def lines() -> list[dict]:
    return [json.loads(line) for line in FIXTURE.read_text().splitlines()]


def write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_the_cost_state_record_is_read_into_the_main_trajectory():
    (main,) = read_trajectories(FIXTURE)
    state = main.cost_state
    assert state is not None and state.total_usd == pytest.approx(CLAUDE_CODE_TOTAL)
    assert state.usage == {"claude-sonnet-4-6": {"input": 1732, "output": 144, "cache_read": 156981,
                                                 "cache_write_5m": 46613, "cache_write_1h": 0}}
    assert cost_state_usd(main, Pricer()) == pytest.approx(CLAUDE_CODE_TOTAL, abs=1e-9)
    assert len(main.requests) == 8 and sum(1 for r in main.requests if r.compaction_before) == 1


def test_the_recorded_figure_is_the_cost_state_and_holds_the_compaction_call():
    (s,) = run_replay(ReplayOptions((FIXTURE,))).sessions
    assert s.recorded_source == "cost-state"
    assert s.recorded_cost_usd == pytest.approx(CLAUDE_CODE_TOTAL, abs=1e-6)
    assert s.claude_code_cost_usd == pytest.approx(CLAUDE_CODE_TOTAL)
    assert s.logged_cost_usd is not None and s.logged_cost_usd < s.recorded_cost_usd   # the summary call
    assert s.summary_source == "log"          # sized from the summary the log restarted from


def test_the_last_cost_state_wins_and_a_damaged_one_is_skipped(tmp_path):
    records = lines()
    last = next(r for r in records if r["type"] == "cost-state")
    early = json.loads(json.dumps(last))
    early["totalCostUSD"] = 0.01
    early["modelUsage"]["claude-sonnet-4-6"].update(inputTokens=1, outputTokens=1, cacheReadInputTokens=0,
                                                    cacheCreationInputTokens=0, cacheCreationEphemeral5mInputTokens=0)
    damaged = {**last, "modelUsage": {"claude-sonnet-4-6": {"inputTokens": "many"}}}
    at = records.index(last)
    path = write(tmp_path / "s.jsonl", [*records[:5], early, *records[5:at + 1], damaged, *records[at + 1:]])
    (main,) = read_trajectories(path)
    assert main.cost_state is not None and main.cost_state.total_usd == pytest.approx(CLAUDE_CODE_TOTAL)
    assert cost_state_of(damaged) is None


def test_a_cost_state_without_the_5m_split_counts_its_writes_as_5_minute_ones():
    entry = {"inputTokens": 10, "outputTokens": 5, "cacheReadInputTokens": 100, "cacheCreationInputTokens": 40}
    state = cost_state_of({"type": "cost-state", "sessionId": "s", "modelUsage": {"m": entry}})
    assert state is not None and state.usage["m"] == {"input": 10, "output": 5, "cache_read": 100,
                                                      "cache_write_5m": 40, "cache_write_1h": 0}
    assert state.total_usd is None


def test_without_a_cost_state_the_recorded_figure_says_it_misses_the_compaction_calls(tmp_path):
    path = write(tmp_path / "s.jsonl", [r for r in lines() if r["type"] != "cost-state"])
    report = run_replay(ReplayOptions((path,)))
    (s,) = report.sessions
    assert s.recorded_source == "requests" and s.recorded_cost_usd == pytest.approx(s.logged_cost_usd, abs=1e-6)
    assert s.claude_code_cost_usd is None
    assert any("exclude its 1 compaction call" in n for n in report.limits)


def test_a_disagreeing_claude_code_total_is_noted(tmp_path):
    records = lines()
    for r in records:
        if r["type"] == "cost-state":
            r["totalCostUSD"] = CLAUDE_CODE_TOTAL * 1.2
    report = run_replay(ReplayOptions((write(tmp_path / "s.jsonl", records),)))
    assert report.sessions[0].recorded_cost_usd == pytest.approx(CLAUDE_CODE_TOTAL, abs=1e-6)
    assert any("Claude Code's own total" in n and "differs" in n for n in report.limits)


def test_usage_and_watch_read_the_cost_state_line_not_at_all(tmp_path, monkeypatch):
    """The usage report, watch and the status line count assistant records: the cost-state line
    passes none of their filters, so their dollars are the same with it and without it, and equal
    to replay's "as logged" figure (not the recorded one)."""
    from agent_core.watch.state import WatchState
    from app.cli.usage import build_report

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    raw = FIXTURE.read_bytes().splitlines()
    assert not any(is_candidate(line) for line in raw if b'"cost-state"' in line)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with_state = write(tmp_path / "a" / "s.jsonl", lines())
    without = write(tmp_path / "b" / "s.jsonl", [r for r in lines() if r["type"] != "cost-state"])

    def usage_usd(path: Path) -> float:
        report = build_report([path])
        return sum(s.tally.cost_usd or 0 for s in report.sessions.values())

    def watched_usd(path: Path) -> float:
        w = WatchState(path)
        w.poll()
        return w.cost.total_usd

    records = [r for r in LogReader(with_state).records(final=True) if isinstance(r, UsageRecord)]
    assert len(records) == 8
    (s,) = run_replay(ReplayOptions((with_state,))).sessions
    assert usage_usd(with_state) == pytest.approx(usage_usd(without), abs=1e-12)
    assert usage_usd(with_state) == pytest.approx(s.logged_cost_usd, abs=1e-9)
    assert watched_usd(with_state) == pytest.approx(watched_usd(without), abs=1e-12)
    assert watched_usd(with_state) == pytest.approx(s.logged_cost_usd, abs=1e-9)


def test_predict_cost_returns_the_prediction_beside_the_recorded_dollars():
    p = predict_cost(FIXTURE, "cc", 200_000)
    assert p.policy == "cc" and p.window == 200_000 and p.requests == 8
    assert p.recorded_source == "cost-state" and p.recorded_usd == pytest.approx(CLAUDE_CODE_TOTAL, abs=1e-6)
    assert p.claude_code_usd == pytest.approx(CLAUDE_CODE_TOTAL)
    assert p.predicted_usd == pytest.approx(p.cost_usd + p.reread_usd, abs=1e-6)
    assert p.ratio == pytest.approx(p.predicted_usd / p.recorded_usd)
    assert list(p.report.totals) == ["cc"]                # only the policy asked for is replayed
    variant = predict_cost(FIXTURE, "hour:CTXTUI_CACHE_TTL=1h", 200_000)
    assert variant.policy == "hour" and variant.predicted_usd is not None
    with pytest.raises(FileNotFoundError):
        predict_cost(FIXTURE.with_name("missing.jsonl"))


def test_predict_cost_with_another_clients_head():
    """Claude Code's fixed head is ~21,500 tokens here; priced with a 1,700-token one (ctxtui's),
    every request reads 19,800 fewer tokens and the first writes that many fewer; the recorded
    figure stays the log's."""
    own = predict_cost(FIXTURE, "none", 200_000)
    small = predict_cost(FIXTURE, "none", 200_000, head_tokens=1_700)
    (t,) = read_trajectories(FIXTURE)
    assert t.overhead_tokens > 20_000
    assert small.recorded_usd == own.recorded_usd
    assert small.predicted_usd < own.predicted_usd - (t.overhead_tokens - 1_700) * 3.75e-6
