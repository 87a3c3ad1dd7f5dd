"""The cache doctor on a recorded session (issue 27): `ctxtui replay` lists each request that read
less than the request before it left, where its prefix changed (tools or system, message N) and
why (model switch, TTL expired, compaction rewrite) — in `--json`'s `cache_doctor`, in the text
report, and back from a saved report."""
from __future__ import annotations

import json

from agent_core.logs.trajectory import Message, RecordedCompaction, Request, Trajectory
from agent_core.replay.cache_doctor_log import log_misses
from agent_core.replay.report import doctor_lines, format_text
from agent_core.replay.report_model import ReplayReport
from agent_core.replay.options import make_options
from agent_core.replay.runner import run_replay
from tests.log_helpers import MODEL, assistant, usage as cc_usage, user, write_log

OPUS, HAIKU = "claude-opus-4-6", "claude-haiku-4-5"
HEAD = 2_000


def usage(read, write):
    return {"input": 0, "output": 10, "cache_read": read, "cache_write_1h": 0, "cache_write_5m": write}


def msg(key, tokens, role="user"):
    return Message(role=role, kind="prompt" if role == "user" else "assistant", tokens=tokens, key=key, text=key)


def request(i, ts, added, u, model=OPUS, **kw):
    return Request(index=i, timestamp=ts, model=model, added=added, response=msg(f"r{i}", 0, "assistant"), usage=u,
                   **kw)


def session() -> Trajectory:
    """Steady growth, then a model switch, a pause past the TTL, a compaction, and a head change."""
    a, b, c = msg("a", 6_000), msg("b", 3_000), msg("c", 3_000)
    summary = msg("summary", 1_500)
    return Trajectory("x.jsonl", "s", OPUS, overhead_tokens=HEAD, requests=[
        request(0, 0.0, [a], usage(0, 8_000)),
        request(1, 30.0, [b], usage(8_000, 3_000)),                          # steady: read what 0 left
        request(2, 60.0, [c], usage(0, 14_000), model=HAIKU),                # another model's cache
        request(3, 90.0, [msg("d", 100)], usage(14_000, 100), model=HAIKU),   # haiku again: its own entry
        request(4, 800.0, [msg("e", 100)], usage(0, 14_200), model=HAIKU),   # 5m writes, 710 s later
        request(5, 830.0, [msg("f", 100)], usage(1_000, 2_700), model=HAIKU,
                compaction_before=RecordedCompaction("auto", 14_300, 1_500),
                context_after_compaction=[summary]),
        request(6, 860.0, [msg("g", 100)], usage(500, 3_400), model=HAIKU),  # read under the head
    ])


def test_each_short_read_says_where_and_why():
    found = [(m.request, m.where, m.why) for m in log_misses(session())]
    assert found == [(2, "", "model switch"), (4, "", "TTL expired"), (5, "message 1", "compaction rewrite"),
                     (6, "tools or system", None)]
    miss = log_misses(session())[2]
    assert (miss.read, miss.expected) == (1_000, 14_200)


def claude_code_log(tmp_path):
    """A Claude Code log: three steady requests, then one on haiku (another model's cache)."""
    records, ts = [], "2025-06-14T10:00:{:02d}Z"
    reads = [(0, 12_000, MODEL), (12_000, 500, MODEL), (12_500, 500, MODEL), (0, 13_500, "claude-haiku-4-5")]
    for i, (read, write, model) in enumerate(reads):
        records.append(user(f"prompt {i} " + "word " * 50, uuid=f"u{i}", ts=ts.format(2 * i)))
        records.append(assistant(f"m{i}", f"r{i}", u=cc_usage(inp=5, write=write, read=read), model=model,
                                 uuid=f"a{i}", ts=ts.format(2 * i + 1)))
    return write_log(tmp_path / "sess-1.jsonl", records)


def test_replay_reports_it_in_json_and_text_and_reads_it_back(tmp_path):
    report = run_replay(make_options([str(claude_code_log(tmp_path))]))
    main = report.to_json()["sessions"][0]
    [miss] = main["cache_doctor"]
    assert (miss["request"], miss["where"], miss["why"], miss["read"]) == (3, None, "model switch", 0)
    assert miss["expected"] > 12_000 and miss["short"] == miss["expected"]
    assert "  cache doctor: request 3 read 0 of " in format_text(report)
    again = ReplayReport.from_json(json.loads(json.dumps(report.to_json())))
    assert again.sessions[0].cache_doctor == report.sessions[0].cache_doctor
    old = json.loads(json.dumps(report.to_json()))
    del old["sessions"][0]["cache_doctor"]             # a report saved before the doctor
    assert ReplayReport.from_json(old).sessions[0].cache_doctor == ()


def test_the_text_report_caps_its_lines():
    misses = log_misses(session()) * 5
    lines = doctor_lines(misses, limit=3)
    assert len(lines) == 4 and lines[-1] == "  cache doctor: and 17 more requests (--json lists every one)"
