"""A response's usage is its final copy's (issue 15): Claude Code repeats `message.usage` on every
content block and only the last copy holds the final output count."""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from agent_core.logs import Deduper, LogReader, UsageRecord, discover
from agent_core.logs.claude_code import final_usage, response_key
from agent_core.usage.report import UsageReport
from tests.log_helpers import assistant, read_all, usage, usages, write_log

REAL = Path(__file__).resolve().parents[4] / "shared" / "reference" / "real-cc-sessions"


def _report(recs) -> UsageReport:
    r = UsageReport(utc=True)
    r.add_all(recs)
    return r


def test_the_last_copy_of_a_response_gives_its_output_tokens(tmp_path):
    log = write_log(tmp_path / "s.jsonl", [
        assistant("m1", "r1", u=usage(inp=5, out=10), block="thinking"),
        assistant("m1", "r1", u=usage(inp=5, out=10), block="text"),
        assistant("m1", "r1", u=usage(inp=5, out=441), block="tool_use"),
        assistant("m2", "r2", u=usage(inp=7, out=3)),
    ])
    followed = usages(LogReader(log).read())          # following: each upgrade as it lands
    assert [(r.request_key, r.buckets["output"]) for r in followed] == [("m1:r1", 10), ("m1:r1", 441),
                                                                         ("m2:r2", 3)]
    assert followed[1].replaces is followed[0]
    once = usages(read_all(log))                      # a finished file: the final copy only
    assert [(r.request_key, r.buckets["output"], r.replaces) for r in once] == [("m1:r1", 441, None),
                                                                                ("m2:r2", 3, None)]
    for recs in (followed, once):
        rep = _report(recs)
        assert rep.totals.requests == 2
        assert rep.totals.tokens["output"] == 444
        assert rep.totals.tokens["input"] == 12


def test_upgrades_stay_one_link_deep_and_add_up(tmp_path):
    log = write_log(tmp_path / "s.jsonl", [assistant("m", "r", u=usage(out=n)) for n in (1, 2, 3, 3, 9)])
    recs = usages(LogReader(log).read())
    assert [r.buckets["output"] for r in recs] == [1, 2, 3, 9]
    assert all(r.replaces is None or r.replaces.replaces is None for r in recs)
    rep = _report(recs)
    assert (rep.totals.requests, rep.totals.tokens["output"]) == (1, 9)


def test_a_sidechain_replay_with_other_usage_keeps_the_main_chain_attribution(tmp_path):
    log = write_log(tmp_path / "s.jsonl", [
        assistant("m", "r", u=usage(out=5)),
        assistant("m", "r", u=usage(out=50), sidechain=True),
    ])
    recs = usages(read_all(log))
    assert recs[-1].is_sidechain is False and recs[-1].buckets["output"] == 50
    (s,) = _report(recs).sessions.values()
    assert (s.tally.requests, s.tally.tokens["output"], s.subagent_requests) == (1, 50, 0)


def test_sidechain_copy_then_main_copies_with_growing_output(tmp_path):
    log = write_log(tmp_path / "s.jsonl", [
        assistant("m", "r", u=usage(out=5), sidechain=True),
        assistant("m", "r", u=usage(out=5)),
        assistant("m", "r", u=usage(out=70)),
    ])
    (s,) = _report(usages(read_all(log))).sessions.values()
    assert (s.tally.requests, s.tally.tokens["output"], s.subagent_requests) == (1, 70, 0)


def test_an_upgrade_in_another_file_replaces_the_record_of_the_first(tmp_path):
    a = write_log(tmp_path / "a.jsonl", [assistant("m", "r", u=usage(out=5), sidechain=True),
                                         assistant("x", "y", u=usage(out=1), sidechain=True)])
    b = write_log(tmp_path / "b.jsonl", [assistant("m", "r", u=usage(out=5)), assistant("m", "r", u=usage(out=60))])
    recs = usages(read_all(a, b))
    assert [(r.request_key, r.buckets["output"], r.is_sidechain) for r in recs] == [
        ("m:r", 5, True), ("x:y", 1, True), ("m:r", 60, False)]
    assert recs[-1].replaces is recs[0]               # the held copy's replacement carried over
    (s,) = _report(recs).sessions.values()
    assert (s.tally.requests, s.tally.tokens["output"], s.subagent_requests) == (2, 61, 1)


def test_a_follower_sees_the_final_copy_appended_later(tmp_path):
    log = write_log(tmp_path / "s.jsonl", [assistant("m", "r", u=usage(out=10))])
    reader = LogReader(log)
    rep = _report(reader.read())
    with open(log, "a", encoding="utf-8") as f:
        f.write(json.dumps(assistant("m", "r", u=usage(out=300), block="tool_use")) + "\n")
    new = reader.read()
    assert len(new) == 1 and new[0].replaces is not None
    rep.add_all(new)
    assert (rep.totals.requests, rep.totals.tokens["output"]) == (1, 300)


def test_final_usage_helper_keeps_the_last_copy_per_response():
    objs = [assistant("m1", "r1", u=usage(out=1)), assistant("m1", "r1", u=usage(out=8)),
            assistant("m2", "r2", u=usage(out=4)), {"type": "user"}]
    got = final_usage(objs)
    assert list(got) == ["m1:r1", "m2:r2"]
    assert got["m1:r1"]["output_tokens"] == 8
    assert response_key(objs[0]) == "m1:r1"


def test_deduper_drops_identical_repeats():
    d = Deduper()
    a = UsageRecord("s", "x", 1.0, "k", {"input": 1, "output": 2})
    assert d.admit(a) is a
    assert not d.wanted("k", False, {"input": 1, "output": 2})
    assert d.admit(UsageRecord("s", "x", 1.0, "k", {"input": 1, "output": 2})) is None
    assert d.wanted("k", False, {"input": 1, "output": 3})
    assert len(d) == 1


def _independent_output_per_model(files: list[Path]) -> dict[str, int]:
    """Written apart from the product: parse every line (a progress record's nested sub-agent
    response too), keep the last copy per message.id + requestId, skip Claude Code's own
    <synthetic> responses, sum output_tokens per model."""
    last: dict[tuple, tuple[str, int]] = {}
    for f in files:
        for line in f.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict) and obj.get("type") == "progress":   # a sub-agent's response, nested
                data = obj.get("data") if isinstance(obj.get("data"), dict) else {}
                obj = data.get("message") if data.get("type") == "agent_progress" else None
            if not isinstance(obj, dict) or obj.get("type") != "assistant":
                continue
            msg = obj.get("message") or {}
            u = msg.get("usage")
            if not isinstance(u, dict) or msg.get("model") == "<synthetic>":
                continue
            key = (msg.get("id"), obj.get("requestId")) if msg.get("id") else ("uuid", obj.get("uuid"))
            last[key] = (msg.get("model") or "unknown", int(u.get("output_tokens") or 0))
    out: dict[str, int] = defaultdict(int)
    for model, n in last.values():
        out[model] += n
    return dict(out)


@pytest.mark.skipif(not REAL.is_dir(), reason="the real Claude Code logs are not here")
def test_output_tokens_per_model_on_real_claude_code_logs_match_an_independent_count():
    files = discover([REAL])
    dedup = Deduper()
    rep = UsageReport(utc=True)
    for f in files:
        rep.add_all(LogReader(f, dedup=dedup).records(final=True))
    expected = _independent_output_per_model(files)
    got = {m: t.tokens["output"] for m, t in rep.by_model.items()}
    assert got == expected
    assert sum(expected.values()) > 0
