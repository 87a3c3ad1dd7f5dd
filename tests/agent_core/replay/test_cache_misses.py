"""Replay's prompt cache is per model, and every miss replay lists says why (issue 24)."""
from __future__ import annotations

import pytest

from agent_core.logs.trajectory import Message, Request, Trajectory
from agent_core.pricing.pricer import Pricer
from agent_core.replay.policies import NoCompaction
from agent_core.replay.references import ReferenceIndex
from agent_core.replay.report import format_text
from agent_core.replay.report_model import ReplayReport
from agent_core.replay.runner import run_replay, validation_of
from agent_core.replay.options import make_options
from agent_core.replay.simulate import simulate
from agent_core.replay.validate import validate

OPUS, HAIKU = "claude-opus-4-6", "claude-haiku-4-5"


def usage(read, write, ttl="5m"):
    return {"input": 0, "output": 10, "cache_read": read,
            "cache_write_1h": write if ttl == "1h" else 0, "cache_write_5m": write if ttl == "5m" else 0}


def msg(key, tokens, role="user"):
    return Message(role=role, kind="prompt" if role == "user" else "assistant", tokens=tokens, key=key,
                   text=key)


def request(i, ts, added, u, model=OPUS):
    return Request(index=i, timestamp=ts, model=model, added=added, response=msg(f"r{i}", 0, "assistant"), usage=u)


def switch_session() -> Trajectory:
    """opus, then haiku on the same context (reading nothing opus wrote), then opus again."""
    return Trajectory("x.jsonl", "s", OPUS, overhead_tokens=2_000, requests=[
        request(0, 0.0, [msg("a", 3_000)], usage(0, 5_000)),
        request(1, 30.0, [msg("b", 500)], usage(0, 5_500), model=HAIKU),
        request(2, 60.0, [msg("c", 500)], usage(5_000, 1_000))])


def test_a_haiku_request_between_opus_requests_reads_nothing_opus_wrote():
    t = switch_session()
    run = simulate(t, NoCompaction("5m"), window=200_000, pricer=Pricer(), refs=ReferenceIndex(t))
    assert run.tokens_by_bucket["cache_read"] == 5_000          # only the last opus request, from opus' entry
    assert run.tokens_by_bucket["cache_write_5m"] == 5_000 + 5_500 + 1_000
    checked = validate(t).checked
    assert [(c.sim_read, c.sim_write) for c in checked] == [(0, 5_000), (0, 5_500), (5_000, 1_000)]
    assert validate(t).cache_read_error_pct == 0


def test_a_model_switch_is_a_miss_with_its_reason():
    misses = validate(switch_session()).check().misses
    assert [(m.request, m.reason, m.read, m.expected) for m in misses] == [(1, "model switch", 0, 5_000)]


@pytest.mark.parametrize("gap, read, reason", [
    (400.0, 0, "TTL"),                                      # 5-minute writes, 400 s later
    (60.0, 0, "tool list changed"),                         # not even the head was read
    (60.0, 2_000, "first message block changed"),           # exactly the head (tools and system)
    (60.0, 3_000, "unknown"),                               # part of the messages
])
def test_every_miss_has_a_reason(gap, read, reason):
    t = Trajectory("x.jsonl", "s", OPUS, overhead_tokens=2_000, requests=[
        request(0, 0.0, [msg("a", 3_000)], usage(0, 5_000)),
        request(1, gap, [msg("b", 500)], usage(read, 5_500 - read))])
    (miss,) = validate(t).check().misses
    assert (miss.request, miss.reason, miss.read, miss.expected) == (1, reason, read, 5_000)


def test_a_request_that_reads_what_it_should_is_no_miss():
    t = Trajectory("x.jsonl", "s", OPUS, overhead_tokens=2_000, requests=[
        request(0, 0.0, [msg("a", 3_000)], usage(0, 5_000)),
        request(1, 60.0, [msg("b", 500)], usage(5_000, 500))])
    assert validate(t).check().misses == ()


def test_the_report_text_and_json_name_each_misses_reason(tmp_path):
    (tmp_path / "x.jsonl").write_text("")
    t = switch_session()
    report = run_replay(make_options([str(tmp_path / "x.jsonl")]), trajectories=[t])
    data = report.to_json()
    v = data["sessions"][0]["validation"]
    assert v["misses"] == [{"request": 1, "reason": "model switch", "read": 0, "expected": 5_000}]
    assert ReplayReport.from_json(data).sessions[0].validation == validation_of(t)
    assert "cache misses: model switch: request 1" in format_text(report)
