"""The msgspec decoder of big reads (agent_core/logs/fast_decode.py) gives the usage parser what
`json` gives it, line for line, or refuses the line and leaves it to `json`: generated records with
every field the parser reads in every JSON type, written compact or spaced, and hostile bytes."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

from agent_core.logs.claude_code import extract, is_candidate
from agent_core.logs.fast_decode import decoder
from agent_core.logs.reader import LogReader
from agent_core.logs.records import CorruptRecord, Deduper
from tests.log_helpers import assistant, boundary, progress, usage, user, write_log

loads = decoder()

scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=False),
                    st.text(max_size=12))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                                           max_size=3), max_leaves=8)
usage_dicts = st.fixed_dictionaries({}, optional={
    "input_tokens": st.one_of(st.integers(-5, 10**7), values), "output_tokens": st.integers(0, 10**6),
    "cache_creation_input_tokens": st.integers(0, 10**6), "cache_read_input_tokens": st.integers(0, 10**7),
    "cache_creation": st.one_of(values, st.fixed_dictionaries({"ephemeral_1h_input_tokens": st.integers(0, 9999)}))})
messages = st.fixed_dictionaries({}, optional={
    "id": st.one_of(st.text(max_size=8), values), "model": st.one_of(st.sampled_from(
        ["claude-opus-4-6", "<synthetic>", "claude-sonnet-4-5-20250929"]), values),
    "usage": st.one_of(usage_dicts, values), "content": values, "role": st.just("assistant")})
records = st.fixed_dictionaries({}, optional={
    "type": st.sampled_from(["assistant", "user", "system", "progress", "summary"]) | values,
    "subtype": st.sampled_from(["compact_boundary", "x"]) | values,
    "message": st.one_of(messages, values), "requestId": st.text(max_size=8) | values,
    "uuid": st.text(max_size=8) | values, "isSidechain": st.booleans() | values,
    "sessionId": st.text(max_size=8) | values, "timestamp": st.sampled_from(
        ["2025-06-14T10:00:00Z", "2025-06-14T10:00:00.123+02:00", "junk"]) | values,
    "agentId": values, "costUSD": values, "compactMetadata": values, "isCompactSummary": values,
    "data": st.one_of(values, st.fixed_dictionaries({"type": st.just("agent_progress"), "agentId": values,
                                                     "message": st.one_of(values, st.fixed_dictionaries(
                                                         {"type": st.just("assistant"), "message": messages}))})),
    "toolUseResult": values})


def _facts(obj):
    try:
        facts = extract(obj, "fallback")
    except CorruptRecord:
        return "corrupt"
    if facts is not None and isinstance(facts[1], str) and facts[1].startswith("uuid:#"):
        facts = (facts[0], "uuid:#anonymous", *facts[2:])      # a key of its own, different every time
    return facts


def _named(records):
    """The records, with each key of a record that has no ids (new every read) as one name."""
    out = []
    for r in records:
        if getattr(r, "request_key", "").startswith("uuid:#"):
            r.request_key = "uuid:#anonymous"
        out.append(r)
    return out


@settings(max_examples=400, deadline=None)
@given(records, st.booleans(), st.booleans())
def test_the_parser_reads_the_same_facts_from_either_decoder(rec, spaced, ascii_only):
    line = json.dumps(rec, separators=(", ", ": ") if spaced else (",", ":"), ensure_ascii=ascii_only).encode()
    reference = json.loads(line)
    try:
        fast = loads(line)
    except ValueError:
        return                       # refused: json decides, as without the fast decoder
    assert _facts(fast) == _facts(reference)


@pytest.mark.parametrize("line", [
    b'{"type":"assistant","message":{"id":"m","usage":{"input_tokens":NaN}}}',
    b'{"type":"assistant","x":"\xff\xfe","message":{"usage":{}}}',
    b'{"type":"assistant","message":"not an object"}',
    b'{"type":"assistant","message":{"id":"m"}} trailing',
    b'{"type":"assistant","message":{"usage":{"input_tokens":1e400}}}',
])
def test_a_line_the_fast_decoder_cannot_vouch_for_is_refused(line):
    with pytest.raises(ValueError):
        loads(line)


def test_duplicate_keys_and_escapes_read_as_json_reads_them():
    line = (b'{"type":"assistant","message":{"id":"a","usage":{"input_tokens":1}},'
            b'"message":{"id":"b","model":"claude-opus-4-6","usage":{"input_tokens":2}},"requestId":"\\u0072"}')
    assert _facts(loads(line)) == _facts(json.loads(line))
    surrogate = b'{"type":"user","isCompactSummary":true,"uuid":"\\ud800"}'
    try:
        fast = loads(surrogate)
    except ValueError:
        fast = None
    assert fast is None or _facts(fast) == _facts(json.loads(surrogate))


def test_a_hostile_log_reads_the_same_with_the_fast_decoder(tmp_path):
    big = "x" * 50_000
    log = write_log(tmp_path / "s.jsonl", [
        user("hi"), assistant("m1", "r1", u=usage(inp=100, out=5)), assistant("m1", "r1", u=usage(inp=100, out=50)),
        boundary(120_000), user("summary", isCompactSummary=True),
        progress(assistant("m2", "r2", u=usage(inp=7, out=3), sidechain=True)),
        assistant("m3", "r3", u={"input_tokens": 10**15}),         # absurd: corrupt
        {"type": "assistant", "message": {"id": "m4", "content": [{"type": "text", "text": big}],
                                          "usage": {"input_tokens": 9, "output_tokens": 1}}, "requestId": "r4"},
    ], tail='{"type":"assistant","message":{"usage":{"input_tokens":NaN}},"requestId":"r5","x":1}\n'
            '{"type":"assistant","x":"\\udcff","message":{"usage":{}}}\n{"cut off')
    with open(log, "ab") as f:
        f.write(b'\n{"type":"assistant","x":"\xff","message":{"id":"m6","usage":{"input_tokens":1}}}\n')
    plain = LogReader(log, dedup=Deduper())
    fast = LogReader(log, dedup=Deduper(), loads=loads)
    got_plain, got_fast = _named(plain.records(final=True)), _named(fast.records(final=True))
    diff = [(n, getattr(a, n), getattr(b, n)) for a, b in zip(got_fast, got_plain) for n in a.__slots__
            if getattr(a, n) != getattr(b, n)]
    assert diff == [] and len(got_fast) == len(got_plain) >= 5
    assert (fast.stats.lines, fast.stats.corrupt, fast.stats.first_corrupt_line) == \
           (plain.stats.lines, plain.stats.corrupt, plain.stats.first_corrupt_line)
    assert is_candidate(b'{"usage":1}') and is_candidate(b"isCompactSummary") and not is_candidate(b'{"type":"user"}')
