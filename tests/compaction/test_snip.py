"""Layer 2: snip drops old middle rounds, archives first, leaves a marker, has hysteresis."""
from __future__ import annotations

import os
import stat

from compaction import (Entry, PipelineConfig, PipelineState, count_tokens, project, read_transcript,
                        tool_result_block, validate_history)
from compaction.layers import snip
from compaction.layer_context import LayerContext
from tests.compaction.snip_helpers import BUDGET, T0, session


def extend(history: list[Entry], rounds: int, size: int = 3_000) -> list[Entry]:
    """More rounds, each response's usage being the count of everything before it (as the API says)."""
    out = list(history)
    for _ in range(rounds):
        tid = f"toolu_more_{len(out)}"
        a = Entry({"role": "assistant", "content": [{"type": "tool_use", "id": tid, "name": "bash",
                                                     "input": {"command": "make"}}]}, response_id=f"more_{len(out)}")
        a = Entry(a.message, uuid=a.uuid, response_id=a.response_id,
                  usage={"input_tokens": count_tokens(out), "output_tokens": a.tokens})
        out += [a, Entry({"role": "user", "content": [tool_result_block(tid, "y" * size)]})]
    return out


def ctx(es, tmp_path, state=None, **cfg) -> LayerContext:
    config = PipelineConfig(budget=BUDGET, **cfg)
    return LayerContext(config, state or PipelineState(), tmp_path, T0 + 99_999, count_tokens(es))


def transcripts(tmp_path) -> list:
    d = tmp_path / "transcripts"
    return sorted(d.iterdir()) if d.exists() else []


def test_snip_drops_middle_rounds_after_archiving_and_leaves_a_marker(tmp_path):
    es = session(80)
    before = count_tokens(es)
    assert before > BUDGET.warning_threshold
    res = snip.apply(es, ctx(es, tmp_path))
    out = res.entries
    assert res.report is not None and res.report.tokens_after < before
    # archive first: the whole history, private
    (path,) = transcripts(tmp_path)
    assert [e.uuid for e in read_transcript(path)] == [e.uuid for e in es]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    # head kept, then the marker, then a recent tail ending where the history ended
    assert out[0] is es[0]
    marker = out[1]
    assert marker.kind == "snip_marker" and marker.role == "user"
    n = res.report.details["rounds"]
    assert f"{n} earlier API round(s)" in marker.text() and str(path) in marker.text()
    assert f"{2 * n} messages" in marker.text()
    assert [e.uuid for e in out[2:]] == [e.uuid for e in es[len(es) - (len(out) - 2):]]
    assert out[2].role == "assistant" and out[-1] is es[-1]
    assert out[-2].meta["usage_adjust"] < 0 and es[-2].meta == {}
    # the count is what the estimates say was freed, and it is under the target
    freed = sum(e.tokens for e in es[1:1 + 2 * n]) - marker.tokens
    assert count_tokens(out) == before - freed <= 27_000
    assert res.report.transcript_path == str(path)
    assert validate_history(project(out)) == []


def test_snip_does_not_fire_below_its_trigger(tmp_path):
    es = session(20)
    assert count_tokens(es) < BUDGET.warning_threshold
    res = snip.apply(es, ctx(es, tmp_path))
    assert res.report is None and res.entries is es and transcripts(tmp_path) == []


def test_no_archive_no_snip(tmp_path):
    es = session(80)
    (tmp_path / "transcripts").write_text("a file where the folder should be")
    res = snip.apply(es, ctx(es, tmp_path))
    assert res.report is None and res.entries is es
    res = snip.apply(es, LayerContext(PipelineConfig(budget=BUDGET), PipelineState(), None, T0, count_tokens(es)))
    assert res.report is None and res.entries is es


def test_snipping_twice_without_growth_archives_nothing_new(tmp_path):
    es = session(80)
    state = PipelineState()
    first = snip.apply(es, ctx(es, tmp_path, state))
    assert len(transcripts(tmp_path)) == 1
    # on its own output: below the hysteresis, nothing happens
    again = snip.apply(first.entries, ctx(first.entries, tmp_path, state))
    assert again.report is None and again.entries is first.entries
    # handed the same un-snipped history again (loop did not adopt): same snip, same archive
    same = snip.apply(es, ctx(es, tmp_path, state))
    assert len(transcripts(tmp_path)) == 1
    assert same.report is not None and same.report.transcript_path == first.report.transcript_path
    assert [e.uuid for e in same.entries] == [e.uuid for e in first.entries]


def test_after_growth_it_fires_again_and_folds_the_earlier_marker(tmp_path):
    es = session(80)
    state = PipelineState()
    out = snip.apply(es, ctx(es, tmp_path, state)).entries
    grown = extend(out, 60)
    assert count_tokens(grown) > BUDGET.warning_threshold
    res = snip.apply(grown, ctx(grown, tmp_path, state))
    assert res.report is not None and len(transcripts(tmp_path)) == 2
    markers = [e for e in res.entries if e.kind == "snip_marker"]
    assert len(markers) == 1
    first_rounds = out[1].meta["rounds_total"]
    assert markers[0].meta["rounds_total"] == first_rounds + res.report.details["rounds"]
    assert out[1].meta["transcript_path"] in markers[0].text()
    assert validate_history(project(res.entries)) == []


def test_head_and_tail_tool_pairs_are_never_split(tmp_path):
    es = session(80)
    # the last response calls two tools whose results are the last entry; round 1 holds a pair too
    es[-2] = Entry({"role": "assistant", "content": [
        {"type": "tool_use", "id": "last_a", "name": "bash", "input": {"command": "ls"}},
        {"type": "tool_use", "id": "last_b", "name": "grep", "input": {"pattern": "x"}}]},
        response_id="msg_last", usage={"input_tokens": 60_000, "output_tokens": 5})
    es[-1] = Entry({"role": "user", "content": [tool_result_block("last_a", "a"), tool_result_block("last_b", "b")]})
    res = snip.apply(es, ctx(es, tmp_path, snip_keep_recent_rounds=1, snip_keep_recent_ratio=0.0))
    out = res.entries
    assert res.report is not None
    assert [e.uuid for e in out[-2:]] == [e.uuid for e in es[-2:]]
    ids_used = {b["id"] for e in out for b in e.content if b.get("type") == "tool_use"}
    ids_answered = {b["tool_use_id"] for e in out for b in e.content if b.get("type") == "tool_result"}
    assert ids_used == ids_answered
    assert validate_history(project(out)) == []


def test_the_round_holding_the_usage_anchor_is_never_snipped(tmp_path):
    es = session(80)
    # only an old response carries usage: everything after it is estimated
    es = [e if e.role != "assistant" or e.response_id == "msg_10" else
          Entry(e.message, uuid=e.uuid, response_id=e.response_id, timestamp=e.timestamp) for e in es]
    es[21] = Entry(es[21].message, uuid=es[21].uuid, response_id="msg_10", timestamp=es[21].timestamp,
                   usage={"input_tokens": 40_000, "output_tokens": 1})
    before = count_tokens(es)
    res = snip.apply(es, ctx(es, tmp_path, snip_keep_recent_ratio=0.0))
    assert res.report is not None
    assert es[21] in res.entries or any(e.uuid == es[21].uuid for e in res.entries)
    assert count_tokens(res.entries) < before


def test_state_is_json_and_the_marker_is_deterministic(tmp_path):
    import json

    es = session(80)
    s1, s2 = PipelineState(), PipelineState()
    a = snip.apply(es, ctx(es, tmp_path / "a", s1)).entries
    b = snip.apply(es, ctx(es, tmp_path / "a", s2)).entries
    assert a[1].uuid == b[1].uuid
    json.dumps(s1.to_dict())


def test_by_default_snip_is_the_fallback_when_summarizing_cannot_run(tmp_path):
    es = session(80)
    assert count_tokens(es) > BUDGET.autocompact_threshold
    c = ctx(es, tmp_path)
    c.summarizing = True                       # a summarizer is there and no breaker stopped it
    assert snip.apply(es, c).report is None    # leave it to session memory / auto-compact
    c.summarizing = False                      # e.g. the failures breaker tripped
    assert snip.apply(es, c).report is not None


def test_snip_below_the_threshold_waits_unless_a_ratio_is_configured(tmp_path):
    es = session(60)
    tokens = count_tokens(es)
    assert BUDGET.warning_threshold < tokens < BUDGET.autocompact_threshold, tokens
    assert snip.apply(es, ctx(es, tmp_path)).report is None
    assert snip.apply(es, ctx(es, tmp_path, snip_trigger_ratio=0.5)).report is not None


def with_prompts(es: list[Entry], every: int = 10) -> list[Entry]:
    """The session with a user prompt beside every `every`-th round's result (and one very long)."""
    out = []
    for i, e in enumerate(es):
        if e.role == "user" and i and i % (2 * every) == 0 and any(b.get("type") == "tool_result" for b in e.content):
            text = f"now check module m{i} and keep the API stable" if i != 4 * every else "L" * 6_000 + " END"
            e = Entry({"role": "user", "content": [*e.content, {"type": "text", "text": text}]},
                      uuid=e.uuid, timestamp=e.timestamp)
        out.append(e)
    return out


def test_snip_quotes_every_user_prompt_it_removes(tmp_path):
    """Issue 25: a snip drops rounds, never what the user asked: each prompt in the removed rounds
    is in the marker word for word (a very long one by its head and tail), across two snips."""
    es = with_prompts(session(80))
    state = PipelineState()
    res = snip.apply(es, ctx(es, tmp_path, state))
    gone = {e.uuid for e in es} - {e.uuid for e in res.entries}
    asked = [b["text"] for e in es if e.uuid in gone for b in e.content if b.get("type") == "text" and e.role == "user"]
    assert len(asked) >= 3 and res.report.details["prompts_quoted"] == len(asked)
    marker = res.entries[1]
    for text in asked:
        if len(text) < 4_000:
            assert f"“{text}”" in marker.text()
        else:
            assert text[:2_500] in marker.text() and "characters left out here" in marker.text()
    grown = extend(res.entries, 60)
    again = snip.apply(grown, ctx(grown, tmp_path, state))
    [folded] = [e for e in again.entries if e.kind == "snip_marker"]
    assert all(f"“{t}”" in folded.text() for t in asked if len(t) < 4_000)
    assert validate_history(project(again.entries)) == []


def test_quoted_prompts_keep_to_their_share_of_the_window():
    quotes = [f"“prompt {i} " + "w" * 400 + "”" for i in range(200)]
    kept = snip.within_share(quotes, 10_000)
    assert kept == quotes[-len(kept):] and sum(map(len, kept)) <= 10_000 < sum(map(len, quotes[-len(kept) - 1:]))
    assert snip.within_share(["“" + "x" * 50_000 + "”"], 10_000)      # the newest always stays
    text = snip.marker_text(3, 6, 9_000, "/t.jsonl", [], kept, left_out=200 - len(kept))
    assert f"{200 - len(kept)} earlier message(s) of the user's are only in the transcripts" in text
