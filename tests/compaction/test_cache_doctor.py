"""The cache doctor's judgement (compaction.accounting.cache_doctor): where a request's prefix
changed against the request before it, and why, from the two shapes and the tokens read."""
from __future__ import annotations

from hypothesis import given, strategies as st

from compaction.accounting.cache_doctor import (COMPACTION_REWRITE, HEAD, MODEL_SWITCH, TOOLS_CHANGED, TTL_EXPIRED,
                                                PromptShape, changed_at, diagnose, digest, shape_of, tolerance)

TOOLS = [{"name": "read_file", "description": "Read a file", "input_schema": {"type": "object"}}]
MESSAGES = [{"role": "user", "content": [{"type": "text", "text": f"message {i} " * 400}]} for i in range(6)]


def shape(*, model="claude-sonnet-4-5", at=0.0, ttl="5m", tools=TOOLS, system="You are ctxtui.",
          messages=MESSAGES, compacted=False, total=0) -> PromptShape:
    s = shape_of(model=model, at=at, ttl=ttl, tools=tools, system=system, messages=messages,
                 sizes=[800] * len(messages), head_tokens=(1_500, 500), compacted=compacted)
    return PromptShape(s.model, s.at, s.ttl, s.head, s.messages, s.sizes, total, s.compacted)


PREVIOUS = shape(total=2_000 + 800 * 6)


def test_a_request_that_reads_what_the_last_one_left_is_no_miss():
    now = shape(at=30.0, messages=[*MESSAGES, {"role": "user", "content": "next"}])
    assert diagnose(2, PREVIOUS, now, read=PREVIOUS.total) is None
    assert diagnose(2, PREVIOUS, now, read=PREVIOUS.total - tolerance(PREVIOUS.total)) is None
    assert diagnose(1, None, now, read=0) is None


def test_cache_markers_do_not_change_a_digest():
    marked = [*MESSAGES[:-1], {"role": "user", "content": [{**MESSAGES[-1]["content"][0],
                                                             "cache_control": {"type": "ephemeral"}}]}]
    assert [digest(m) for m in marked] == [digest(m) for m in MESSAGES]


def test_a_compaction_rewrite_is_named_at_the_message_it_changed():
    rewritten = [{"role": "user", "content": "summary of what came before"}, *MESSAGES[4:]]
    miss = diagnose(7, PREVIOUS, shape(at=30.0, messages=rewritten, compacted=True), read=2_000)
    assert (miss.where, miss.why, miss.request, miss.short) == ("message 1", COMPACTION_REWRITE, 7, 4_800)
    assert miss.text() == ("request 7 read 2,000 of 6,800 cached tokens: changed at message 1 "
                           "(compaction rewrite)")
    # the same change with no compaction behind it: where, but not why
    miss = diagnose(7, PREVIOUS, shape(at=30.0, messages=rewritten), read=2_000)
    assert (miss.where, miss.why) == ("message 1", None)


def test_a_change_deeper_in_is_named_there():
    edited = [*MESSAGES[:3], {"role": "user", "content": "edited"}, *MESSAGES[4:]]
    assert diagnose(3, PREVIOUS, shape(at=5.0, messages=edited), read=4_400).where == "message 4"


def test_a_changed_tool_list_and_system_prompt():
    tools = [*TOOLS, {"name": "grep", "description": "Search", "input_schema": {"type": "object"}}]
    miss = diagnose(3, PREVIOUS, shape(at=5.0, tools=tools), read=0)
    assert (miss.where, miss.why) == ("tools", TOOLS_CHANGED)
    miss = diagnose(3, PREVIOUS, shape(at=5.0, system="You are someone else."), read=1_500)
    assert (miss.where, miss.why) == ("system", None)


def test_model_switch_and_ttl_with_an_unchanged_prefix():
    miss = diagnose(4, PREVIOUS, shape(model="claude-haiku-4-5", at=5.0), read=0)
    assert (miss.where, miss.why) == ("", MODEL_SWITCH)
    assert miss.text().endswith("the prefix did not change (model switch)")
    miss = diagnose(4, PREVIOUS, shape(at=301.0), read=0)
    assert (miss.where, miss.why) == ("", TTL_EXPIRED)
    assert diagnose(4, shape(ttl="1h", total=PREVIOUS.total), shape(at=301.0), read=0).why is None   # 1h: still warm
    miss = diagnose(4, PREVIOUS, shape(at=30.0), read=0)
    assert (miss.where, miss.why) == ("", None) and miss.text().endswith("(the entry was gone)")


def test_a_previous_request_known_only_by_its_figures():
    restored = PromptShape("claude-sonnet-4-5", 0.0, "5m", (), (), total=9_000)
    assert diagnose(1, restored, shape(at=4_000.0), read=0).why == TTL_EXPIRED
    assert diagnose(1, restored, shape(model="claude-opus-4-6", at=5.0), read=0).why == MODEL_SWITCH
    assert diagnose(1, restored, shape(at=5.0), read=0) is None       # nothing known to say


def test_a_log_that_knows_the_head_only_as_a_total_says_where_the_read_stopped():
    def logged(keys, total=0, at=0.0):
        return PromptShape("m", at, "5m", ((HEAD, "h", 3_000),), tuple(keys), (1_000,) * len(keys), total)
    previous = logged("abcdef", total=9_000)
    assert diagnose(2, previous, logged("abcdefg", at=5.0), read=1_200).where == HEAD
    assert diagnose(2, previous, logged("abcdefg", at=5.0), read=5_500).where == "message 3"


@given(st.lists(st.integers(0, 3), min_size=1, max_size=30), st.data())
def test_changed_at_is_the_first_message_that_differs(keys, data):
    before = PromptShape("m", 0, "5m", (("tools", "t", 1), ("system", "s", 1)), tuple(map(str, keys)))
    i = data.draw(st.integers(0, len(keys)))
    after_keys = [str(k) for k in keys[:i]] + data.draw(st.lists(st.sampled_from(["x", "y"]), max_size=5))
    after = PromptShape("m", 0, "5m", before.head, tuple(after_keys))
    where = changed_at(before, after)
    first = next((j for j, (a, b) in enumerate(zip(before.messages, after.messages)) if a != b), None)
    if first is None and len(after.messages) >= len(before.messages):
        assert where == ""
    else:
        assert where == f"message {(first if first is not None else len(after.messages)) + 1}"

