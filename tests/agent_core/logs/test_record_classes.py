"""The log records are written out rather than made by dataclasses (the status line's start): they
must still build, copy and print as the dataclasses did."""
from __future__ import annotations

import pytest

from agent_core.logs.records import CompactionRecord, LineStats, LogFollower, UsageRecord


def test_a_record_takes_its_fields_by_position_or_name_with_the_same_defaults():
    a = UsageRecord("s", "m", 1.0, "k", {"input": 1})
    b = UsageRecord(session_id="s", model="m", timestamp=1.0, request_key="k", buckets={"input": 1})
    for r in (a, b):
        assert (r.is_sidechain, r.context_tokens, r.source, r.path, r.agent_id, r.purpose, r.replaces,
                r.logged_usd) == (False, 0, "claude_code", "", None, "main", None, None)
    assert a != b                       # compared by identity, as with eq=False
    c = CompactionRecord("k", "s", None, "auto", 100)
    assert (c.tokens_after, c.layer, c.has_summary) == (None, "compact", False)


@pytest.mark.parametrize("args, kwargs, says", [
    (("s", "m", 1.0, "k"), {}, "'buckets'"),
    (("s", "m", 1.0, "k", {}), {"colour": 1}, "'colour'"),
    (("s",), {"session_id": "t", "model": "m", "timestamp": 1.0, "request_key": "k", "buckets": {}}, "multiple values"),
    (("s",) * 14, {}, "positional arguments"),
])
def test_a_wrong_construction_is_a_type_error(args, kwargs, says):
    with pytest.raises(TypeError, match=says):
        UsageRecord(*args, **kwargs)


def test_copy_changes_only_what_it_is_told_and_repr_names_every_field():
    r = UsageRecord("s", "m", 1.0, "k", {"input": 1}, replaces=UsageRecord("s", "m", 0.5, "k", {}))
    c = r.copy(replaces=None, context_tokens=9)
    assert c is not r and (c.replaces, c.context_tokens, c.buckets, c.request_key) == (None, 9, {"input": 1}, "k")
    assert r.replaces is not None and r.context_tokens == 0
    assert repr(c).startswith("UsageRecord(session_id='s', model='m', timestamp=1.0, request_key='k'")
    assert "logged_usd=None)" in repr(c)
    with pytest.raises(AttributeError):
        r.colour = 1                    # slots: a misspelt field is an error, not a new attribute


def test_line_stats_compare_by_value_and_each_follower_has_its_own(tmp_path):
    assert LineStats() == LineStats(0, 0, None) and LineStats(lines=2) != LineStats()
    a, b = LogFollower(tmp_path / "a.jsonl"), LogFollower(str(tmp_path / "b.jsonl"))
    a.stats.mark_corrupt(3)
    assert b.stats == LineStats() and a.stats.first_corrupt_line == 3
    assert b.path == tmp_path / "b.jsonl" and a._pieces is not b._pieces
