"""The session-log readers (agent_core/logs): Claude Code's format, ctxtui's, and the follower.

Every fixture log is written by hand, in the shape Claude Code writes, with the writers in
tests/log_helpers.py."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from agent_core.pricing.cost import BUCKETS, price_buckets
from agent_core.logs import CompactionRecord, LogFollower, LogReader, discover, expand, newest_log
from agent_core.logs.records import MARK_BYTES, MAX_TOKENS, CorruptRecord
from agent_core.pricing.pricer import Pricer
from agent_core.usage.report import UsageReport
from tests.log_helpers import MODEL, assistant, boundary, progress, read_all, usage, usages, user, write_log
from tests.hypothesis_budget import examples


# ---- Claude Code reader -------------------------------------------------------------------------

def test_content_block_records_of_one_response_count_once(tmp_path):
    u = usage(inp=5, out=300, write=1000, read=20_000)
    log = write_log(tmp_path / "s.jsonl", [
        user(),
        assistant("msg_1", "req_1", u=u, block="thinking"),
        assistant("msg_1", "req_1", u=u, block="text"),
        assistant("msg_1", "req_1", u=u, block="tool_use"),
        assistant("msg_2", "req_2", u=usage(inp=7, out=10)),
        assistant("msg_2", "req_2", u=usage(inp=7, out=10), block="tool_use"),
    ])
    recs = usages(read_all(log))
    assert [r.request_key for r in recs] == ["msg_1:req_1", "msg_2:req_2"]
    report = UsageReport()
    report.add_all(recs)
    assert report.totals.tokens == {"input": 12, "output": 310, "cache_write_5m": 1000, "cache_write_1h": 0,
                                    "cache_read": 20_000}
    assert report.totals.requests == 2


def test_same_message_id_with_another_request_id_is_another_response(tmp_path):
    log = write_log(tmp_path / "s.jsonl", [assistant("m", "r1"), assistant("m", "r2"), assistant("m", "r1")])
    assert [r.request_key for r in usages(read_all(log))] == ["m:r1", "m:r2"]


def test_context_size_per_assistant_record(tmp_path):
    log = write_log(tmp_path / "s.jsonl", [assistant("m", u=usage(inp=3, out=40, write=500, read=10_000, w1h=7))])
    (rec,) = usages(read_all(log))
    assert rec.context_tokens == 3 + 507 + 10_000        # what the request held, as Claude Code shows it
    assert rec.buckets == {"input": 3, "output": 40, "cache_write_5m": 500, "cache_write_1h": 7, "cache_read": 10_000}


@pytest.mark.parametrize("side_first", [True, False])
def test_sidechain_replay_counts_once_as_main_chain(tmp_path, side_first):
    side = assistant("m1", "r1", sidechain=True, u=usage(inp=50))
    main = assistant("m1", "r1", sidechain=False, u=usage(inp=50))
    log = write_log(tmp_path / "s.jsonl", [side, main] if side_first else [main, side])
    recs = usages(read_all(log))
    report = UsageReport()
    report.add_all(recs)
    assert report.totals.requests == 1
    assert report.totals.tokens["input"] == 50
    (s,) = report.sessions.values()
    assert s.subagent_requests == 0          # attributed to the main chain either way
    assert s.tally.requests == 1
    if side_first:
        assert len(recs) == 1 and recs[0].replaces is None     # one file read once: the main copy only
        followed = usages(LogReader(log).read())              # following it: the upgrade, replacing
        assert followed[-1].replaces is followed[0]


def test_subagent_logs_are_read_and_replays_across_files_count_once(tmp_path):
    proj = tmp_path / "projects" / "-home-me-proj"
    main = write_log(proj / "sess-1.jsonl", [user(), assistant("m1", "r1", u=usage(inp=10))])
    write_log(proj / "sess-1" / "subagents" / "agent-a1.jsonl", [
        assistant("m1", "r1", sidechain=True, u=usage(inp=10), agentId="a1"),   # replay of the parent's call
        assistant("s1", "rs1", sidechain=True, u=usage(inp=1000, out=5), agentId="a1"),
        assistant("s1", "rs1", sidechain=True, u=usage(inp=1000, out=5), agentId="a1", block="tool_use"),
    ])
    files = expand(main)
    assert [f.name for f in files] == ["sess-1.jsonl", "agent-a1.jsonl"]
    assert discover([proj]) == files          # a folder: main logs first, then sub-agent logs
    recs = usages(read_all(*files))
    assert [(r.request_key, r.is_sidechain, r.agent_id) for r in recs] == [("m1:r1", False, None),
                                                                          ("s1:rs1", True, "a1")]
    report = UsageReport()
    report.add_all(recs)
    (s,) = report.sessions.values()
    assert s.session_id == "sess-1" and s.project == "-home-me-proj"
    assert s.tally.tokens["input"] == 1010 and s.subagent_requests == 1


def test_newest_log_skips_subagent_logs(tmp_path):
    import os

    old = write_log(tmp_path / "p" / "old.jsonl", [assistant("m1")])
    new = write_log(tmp_path / "p" / "new.jsonl", [assistant("m2")])
    sub = write_log(tmp_path / "p" / "old" / "subagents" / "agent-1.jsonl", [assistant("m3")])
    os.utime(old, (1000, 1000))
    os.utime(new, (2000, 2000))
    os.utime(sub, (3000, 3000))
    assert newest_log(tmp_path) == new
    assert newest_log(old) == old
    assert newest_log(tmp_path / "empty-or-missing") is None


def test_subagent_records_without_session_id_take_the_session_folder(tmp_path):
    rec = assistant("m", "r")
    del rec["sessionId"]
    f = write_log(tmp_path / "abc" / "subagents" / "agent-1.jsonl", [rec])
    (r,) = usages(read_all(f))
    assert r.session_id == "abc"


def test_synthetic_model_records_are_skipped(tmp_path):
    log = write_log(tmp_path / "s.jsonl", [assistant("m1", model="<synthetic>", u=usage(inp=0, out=0)),
                                           assistant("m2")])
    assert [r.model for r in usages(read_all(log))] == [MODEL]


def test_compaction_boundary_and_summary_with_tokens_after(tmp_path):
    log = write_log(tmp_path / "s.jsonl", [
        user(),
        assistant("m1", "r1", u=usage(inp=5, out=100, read=150_000), ts="2025-06-14T10:59:00Z"),
        boundary(155_000, "auto", uuid="bnd-1"),
        user("This session is being continued from a previous conversation...", uuid="sum-1",
             isCompactSummary=True, isVisibleInTranscriptOnly=True),
        assistant("m2", "r2", u=usage(inp=3, out=200, write=9_000, read=3_000), ts="2025-06-14T11:01:00Z"),
        boundary(80_000, "manual", uuid="bnd-2", ts="2025-06-14T12:00:00Z"),
    ])
    recs = read_all(log)
    comps = [r for r in recs if isinstance(r, CompactionRecord)]
    # the first boundary is yielded when seen, then again once the next response tells its size
    assert [c.key for c in comps] == ["bnd-1", "bnd-1", "bnd-2"]
    first, _, second = comps
    assert (first.trigger, first.tokens_before, first.tokens_after, first.has_summary) == \
        ("auto", 155_000, 3 + 9_000 + 3_000, True)      # the next request, its output apart
    assert (second.trigger, second.tokens_before, second.tokens_after) == ("manual", 80_000, None)
    report = UsageReport()
    report.add_all(recs)
    (s,) = report.sessions.values()
    assert [c.tokens_after for c in s.compactions.values()] == [12_003, None]


def test_sidechain_response_does_not_resolve_main_compaction(tmp_path):
    log = write_log(tmp_path / "s.jsonl", [
        boundary(100_000), assistant("sub", "r", sidechain=True, u=usage(inp=1)),
        assistant("m", "r", u=usage(inp=42, out=0))])
    comps = [r for r in read_all(log) if isinstance(r, CompactionRecord)]
    assert comps[-1].tokens_after == 42


CORRUPT_TAIL = ('"massive error"\n'
                '42\n'
                '{"type": "assistant", "message": {"usage": {"input_tokens": 1 \n'   # truncated inside
                '{"type":"assistant", "requestId": "x", "message": {"id": "y", "usage": {}}, oops}\n'
                '\xff\n'
                '{"type":"assistant","sessionId":"sess-1","requestId":"r9","message":{"id":"m9","model":"x","usa')


def test_corrupt_and_truncated_lines_are_skipped_and_counted(tmp_path):
    log = write_log(tmp_path / "s.jsonl", [assistant("m1", "r1", u=usage(inp=11)), "", "   ", '{"silly": "this"}'],
                    tail=CORRUPT_TAIL)
    reader = LogReader(log)
    recs = usages(reader.records(final=True))
    assert [r.request_key for r in recs] == ["m1:r1"]
    assert reader.skipped == 6
    assert reader.stats.first_corrupt_line == 5


def test_invalid_utf8_and_wrong_shapes_never_crash(tmp_path):
    log = tmp_path / "s.jsonl"
    lines = [b'{"type":"assistant","message":"error","usage":1}',
             b'{"type":"assistant","message":{"usage":"nope","model":"m"}}',
             b'{"type":"assistant","message":{"usage":{"input_tokens":"12","output_tokens":null},"model":5}}',
             b'{"type":"system","subtype":"compact_boundary","compactMetadata":"?"}',
             b'{"type":"user","isCompactSummary":true,"usage":1}',
             b'{"usage": "\xc3\x28"}',
             b'{"usage": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"]
    log.write_bytes(b"\n".join(lines) + b"\n")
    reader = LogReader(log)
    recs = reader.read(final=True)
    (u,) = usages(recs)
    assert u.model == "unknown" and u.buckets["input"] == 12
    assert reader.skipped == 2        # the undecodable and the too-deep lines; the rest are just not usage


# ---- the follower -------------------------------------------------------------------------------

def test_follower_reads_only_appended_bytes(tmp_path):
    log = write_log(tmp_path / "s.jsonl", [assistant("m1", "r1")])
    reader = LogReader(log)
    assert [r.request_key for r in usages(reader.read())] == ["m1:r1"]
    size = log.stat().st_size
    assert reader.offset == size
    # Scribble in place over what was already read, all but the last bytes (a rewrite of those
    # restarts the follower, see test_readers_hardening.py): a re-read would see garbage or m1 again.
    with open(log, "r+b") as f:
        f.write(b"x" * (size - MARK_BYTES - 1))
    with open(log, "a") as f:
        f.write(json.dumps(assistant("m2", "r2")) + "\n")
    assert [r.request_key for r in usages(reader.read())] == ["m2:r2"]
    assert reader.skipped == 0
    assert reader.read() == []


def test_half_written_last_line_is_completed_by_the_next_read(tmp_path):
    line = json.dumps(assistant("m1", "r1", u=usage(inp=77))) + "\n"
    log = tmp_path / "s.jsonl"
    log.write_text(line[:40])
    reader = LogReader(log)
    assert reader.read() == []
    assert reader.follower.pending == line[:40].encode() and reader.skipped == 0
    assert (reader.offset, reader.follower.line_offset) == (40, 0)
    with open(log, "a") as f:
        f.write(line[40:-1])
    assert reader.read() == []                 # still no newline: still pending
    with open(log, "a") as f:
        f.write("\n" + line.replace("m1", "m2"))
    recs = usages(reader.read())
    assert [(r.request_key, r.buckets["input"]) for r in recs] == [("m1:r1", 77), ("m2:r1", 77)]
    assert reader.skipped == 0 and reader.follower.stats.lines == 2
    assert reader.follower.line_offset == reader.offset == log.stat().st_size


def test_follower_restarts_when_the_file_shrinks(tmp_path):
    log = write_log(tmp_path / "s.jsonl", [assistant("m1", "r1"), assistant("m2", "r2")])
    f = LogFollower(log)
    assert len(list(f.lines())) == 2
    write_log(log, ["{}"])
    assert [line for _, line in f.lines()] == [b"{}"]
    assert f.resets == 1


def test_follower_chunk_boundaries_do_not_split_records(tmp_path):
    recs = [assistant(f"m{i}", f"r{i}", u=usage(inp=i)) for i in range(50)]
    log = write_log(tmp_path / "s.jsonl", recs)
    reader = LogReader(log)
    reader.follower.chunk_size = 7                # lines straddle many chunks
    got = usages(reader.read())
    assert [r.buckets["input"] for r in got] == list(range(50))
    assert reader.skipped == 0


def test_missing_file_reads_as_empty_until_it_appears(tmp_path):
    reader = LogReader(tmp_path / "later.jsonl")
    assert reader.read() == []
    write_log(tmp_path / "later.jsonl", [assistant("m1")])
    assert len(usages(reader.read())) == 1 and reader.format == "claude_code"


# ---- ctxtui's own logs --------------------------------------------------------------------------

def _ctxtui_log(home: Path, *, model_calls: bool = False) -> Path:
    """A ctxtui session log with a compaction summary call: as this version writes it
    (`model_calls`: every call is its own record) or as older ones did (summary calls only in the
    cost snapshots' totals, without `"version": 2`)."""
    from agent_core.sessions.session_log import SessionLog
    from agent_core.pricing.tally import CostTally
    from compaction.entry import assistant as a_entry, user as u_entry
    from agent_core import events as ev

    log = SessionLog.create(home, {"model": MODEL}, session_id="20250614T100000-abcdef", now=1749895200.0)
    log.append_entry(u_entry("hello"))
    a = a_entry("hi", response_id="msg_a", usage=usage(inp=10, out=5, read=1000), model=MODEL)
    log.append_entry(a)
    log.append_event(ev.AssistantDone(message_id="msg_a", model=MODEL, usage=usage(inp=10, out=5, read=1000),
                                      stop_reason="end_turn"))
    cost = CostTally()

    def snapshot() -> None:
        if model_calls:
            log.append_state({"cost": cost.to_dict()})
        else:   # an older version: the whole cost book in a `state` record each time
            log._write({"t": "state", "at": 1749895200.0, "cost": {**cost.to_dict(), "version": 1}})

    cost.add(MODEL, usage(inp=10, out=5, read=1000), "main")
    snapshot()
    cost.add(MODEL, usage(inp=2000, out=300), "compaction")
    if model_calls:
        log.append_event(ev.ModelCall(message_id="msg_sum", model=MODEL, purpose="compaction",
                                      usage=usage(inp=2000, out=300)))
    log.append_event(ev.Compaction(layer="auto_compact", trigger="auto", tokens_before=150_000, tokens_after=9_000,
                                   transcript_path="/t.jsonl"))
    log.append_history([a])
    snapshot()
    snapshot()     # no new calls: nothing new counted
    log.append_entry(a_entry("more", response_id="msg_b", usage=usage(inp=1, out=1, read=9000), model=MODEL))
    log.close()
    return log.path


def test_ctxtui_session_log_gives_the_same_records(tmp_path):
    path = _ctxtui_log(tmp_path)
    reader = LogReader(path)
    recs = reader.read(final=True)
    assert reader.format == "ctxtui" and reader.skipped == 0
    us = usages(recs)
    sid = "20250614T100000-abcdef"           # keys are the session's: demo ids repeat across sessions
    assert [(r.request_key, r.purpose, r.session_id) for r in us] == [
        (f"{sid}/msg_a", "main", sid),
        (f"{sid}/compaction:1", "compaction", sid),
        (f"{sid}/msg_b", "main", sid)]
    assert us[1].buckets["input"] == 2000 and us[1].model == MODEL and us[1].context_tokens == 0
    assert us[2].context_tokens == 9002
    (c,) = [r for r in recs if isinstance(r, CompactionRecord)]
    assert (c.layer, c.trigger, c.tokens_before, c.tokens_after) == ("auto_compact", "auto", 150_000, 9_000)


def test_ctxtui_summary_calls_are_read_from_their_own_records(tmp_path):
    reader = LogReader(_ctxtui_log(tmp_path, model_calls=True))
    us = usages(reader.read(final=True))
    assert [(r.request_key.split("/", 1)[1], r.purpose) for r in us] == [
        ("msg_a", "main"), ("msg_sum", "compaction"), ("msg_b", "main")]      # no total rebuilt from snapshots
    assert us[1].buckets["input"] == 2000 and us[1].buckets["output"] == 300 and us[1].model == MODEL


def test_ctxtui_transcripts_are_not_counted_twice(tmp_path):
    path = _ctxtui_log(tmp_path)
    t = path.with_suffix("") / "transcripts" / "20250614T100000-auto.jsonl"
    t.parent.mkdir(parents=True)
    t.write_text(json.dumps({"uuid": "x", "kind": "message", "timestamp": 1.0, "response_id": "msg_zzz",
                             "usage": usage(), "message": {"role": "assistant", "content": []}}) + "\n")
    assert discover([path.parent]) == [path]
    assert discover([path]) == [path]


# ---- pricing ------------------------------------------------------------------------------------

_counts = st.integers(min_value=0, max_value=150_000)


@settings(max_examples=examples(40), deadline=None)
@given(st.tuples(_counts, _counts, _counts, _counts, _counts))
def test_fast_pricer_equals_cost_price_buckets(values):
    pricer = _PRICER
    b = dict(zip(BUCKETS, values))
    assert pricer(MODEL, b) == pytest.approx(price_buckets(MODEL, b), rel=1e-9, abs=1e-12)


_PRICER = Pricer()


def test_fast_pricer_falls_back_past_a_price_tier_and_for_unknown_models():
    pricer = Pricer()
    big = {"input": 150_000, "output": 1000, "cache_write_5m": 0, "cache_write_1h": 0, "cache_read": 100_000}
    small = {**big, "cache_read": 40_000}
    calls = pricer.exact_calls
    assert pricer(MODEL, small) == pytest.approx(price_buckets(MODEL, small))
    assert pricer.exact_calls == calls                    # below the tier: learned rates
    assert pricer(MODEL, big) == pytest.approx(price_buckets(MODEL, big))
    assert pricer.exact_calls == calls + 1                # past it: the exact price
    assert pricer(MODEL, big) > pricer(MODEL, small) * 250_000 / 190_000  # the long-context rate applies
    assert pricer("no-such-model-xyz", small) is None


_token = st.one_of(st.integers(min_value=-5, max_value=10**7), st.none(), st.booleans(), st.floats(allow_nan=True),
                   st.text(max_size=3))


@settings(max_examples=examples(100), deadline=None)
@given(st.dictionaries(st.sampled_from(["input_tokens", "output_tokens", "cache_creation_input_tokens",
                                        "cache_read_input_tokens"]), _token),
       st.one_of(st.none(), st.just({}), st.dictionaries(
           st.sampled_from(["ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens"]), _token)))
def test_fast_bucket_split_equals_cost_usage_buckets(u, split):
    from agent_core.pricing.cost import usage_buckets
    from agent_core.logs.records import buckets_of

    if split is not None:
        u = {**u, "cache_creation": split}
    expected = usage_buckets(u)
    if max(expected.values()) > MAX_TOKENS:       # absurd: the line is skipped as corrupt
        with pytest.raises(CorruptRecord):
            buckets_of(u)
    else:
        assert buckets_of(u) == expected


# ---- sub-agent responses in progress records ------------------------------------------------------

def test_a_subagent_seen_only_in_progress_records_is_counted(tmp_path):
    sub = assistant("sub-1", "req-sub-1", model="claude-haiku-4-5-20251001", u=usage(inp=3, out=40, read=15_000))
    log = write_log(tmp_path / "p" / "s.jsonl", [user(), progress(sub), assistant("main-1", "req-main-1")])
    recs = usages(read_all(log))
    assert [(r.model, r.is_sidechain, r.purpose) for r in recs] == [
        ("claude-haiku-4-5-20251001", True, "subagent"), (MODEL, False, "main")]
    assert recs[0].buckets["cache_read"] == 15_000 and recs[0].agent_id == "a1"
    assert recs[0].timestamp is not None


def test_a_subagent_in_progress_records_and_its_own_log_counts_once(tmp_path):
    sub = assistant("sub-1", "req-sub-1", u=usage(inp=3, out=40), sidechain=True, agentId="a1")
    log = write_log(tmp_path / "p" / "s.jsonl", [user(), progress(sub), assistant("main-1", "req-main-1")])
    write_log(tmp_path / "p" / "s" / "subagents" / "agent-a1.jsonl", [sub])
    recs = usages(read_all(log, tmp_path / "p" / "s" / "subagents" / "agent-a1.jsonl"))
    assert sorted(r.request_key for r in recs) == ["main-1:req-main-1", "sub-1:req-sub-1"]


def test_a_progress_record_without_a_response_is_ignored(tmp_path):
    odd = {"type": "progress", "sessionId": "sess-1", "data": {"type": "bash_progress", "usage": {"input_tokens": 9}}}
    bad = {"type": "progress", "sessionId": "sess-1", "data": {"type": "agent_progress", "message": "usage"}}
    log = write_log(tmp_path / "p" / "s.jsonl", [odd, bad, assistant("main-1", "req-main-1")])
    assert [r.request_key for r in usages(read_all(log))] == ["main-1:req-main-1"]
