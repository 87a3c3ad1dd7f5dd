"""An automatic or reactive LLM compaction in the middle of a turn keeps that turn verbatim after the summary
(the newest prompt and every call and result since), summarising only what came before it, so the turn goes
on without redoing its tool calls; a manual one, or a turn too big to keep, summarises everything."""
from __future__ import annotations

import json

from compaction import Entry, SummarizeError, assistant, project, tool_result_block, user, validate_history
from compaction.layers.autocompact import split_turn
from compaction.layers.ptl import TOOL_OUTPUT_LEFT_OUT
from compaction.summary_prompt import build_summary_prompt
from tests.compaction.autocompact_helpers import ScriptedSummarizer, make_pipeline, session

PROMPT = "Now rename parse() to parse_file() everywhere"


def mid_turn(rounds: int = 32, calls: int = 2, chars: int = 600, prompt: str = PROMPT) -> list[Entry]:
    """A session, then a new prompt the model is working on: `calls` tool calls made and answered."""
    es = session(rounds)
    es.append(user(prompt))
    for c in range(calls):
        tid = f"toolu_turn{c}"
        es.append(assistant([{"type": "text", "text": f"Step {c} of the rename."},
                             {"type": "tool_use", "id": tid, "name": "bash",
                              "input": {"command": f"grep -rn parse {c}"}}],
                            response_id=f"msg_turn{c}", usage={"input_tokens": 16_900 + c, "output_tokens": 40}))
        es.append(user([tool_result_block(tid, f"TURN RESULT {c} " + "r" * chars)]))
    return es


def request_text(call: dict) -> str:
    return json.dumps(call["messages"])


async def test_a_mid_turn_auto_compaction_keeps_the_turn_verbatim(tmp_path):
    s = ScriptedSummarizer()
    p = make_pipeline(tmp_path, s, llm_only=True)
    es = mid_turn()
    before = p.count(es)
    assert before >= p.config.budget.autocompact_threshold
    res = await p.run(es)
    new = res.entries
    assert new[0].kind == "compact_boundary" and new[1].kind == "summary"
    turn = es[-5:]                                       # the prompt, two calls and their results
    assert [e.uuid for e in new[-5:]] == [e.uuid for e in turn]
    assert [e.message for e in new[-5:]] == [e.message for e in turn]   # verbatim, tool pairs whole
    assert validate_history(project(new)) == [] and project(new)[-1]["role"] == "user"
    # the summary request is what came before the turn: no prompt, call or result of it
    [call] = s.calls
    text = request_text(call)
    assert PROMPT not in text and "TURN RESULT" not in text and "toolu_turn" not in text
    assert "Now check file 32, please." in text
    assert call["messages"][-1]["content"][-1]["text"] == build_summary_prompt(None)
    [report] = res.reports
    assert report.details["kept_turn_messages"] == 5 and report.details["turn_not_kept"] is None
    assert "the turn in progress (5 messages) verbatim" in report.action
    # the count is the new history's, not the old usage the kept answers carry
    assert res.tokens == p.count(new) == sum(e.tokens for e in new) < before


async def test_reactive_keeps_the_turn_manual_summarises_it():
    import tempfile
    from pathlib import Path

    for trigger, kept in (("reactive", True), ("manual", False)):
        with tempfile.TemporaryDirectory() as d:
            s = ScriptedSummarizer()
            res = await make_pipeline(Path(d), s, llm_only=True).compact(mid_turn(), trigger=trigger)
            assert ("TURN RESULT 1" in request_text(s.calls[0])) is not kept
            assert ("TURN RESULT 1" in json.dumps([e.message for e in res.entries])) is kept
            assert res.reports[0].details["kept_turn_messages"] == (5 if kept else 0)
            assert validate_history(project(res.entries)) == []


async def test_a_turn_too_big_to_keep_is_summarised_and_the_report_says_so(tmp_path):
    s = ScriptedSummarizer()
    p = make_pipeline(tmp_path, s, llm_only=True)
    es = mid_turn(rounds=12, calls=4, chars=12_000)      # the turn is most of the context
    res = await p.compact(es, trigger="reactive")
    assert "TURN RESULT 3" in request_text(s.calls[0])
    [report] = res.reports
    assert report.details["kept_turn_messages"] == 0
    assert "over the" in report.details["turn_not_kept"] and report.details["turn_not_kept"] in report.action
    assert res.entries[0].kind == "compact_boundary" and validate_history(project(res.entries)) == []


async def test_a_turn_start_is_not_a_turn_in_progress(tmp_path):
    """A history that ends with the user's prompt (nothing answered it yet) is summarised whole, as before."""
    s = ScriptedSummarizer()
    res = await make_pipeline(tmp_path, s, llm_only=True).compact(session(32), trigger="reactive")
    assert "Now check file 32, please." in request_text(s.calls[0])
    assert res.reports[0].details["kept_turn_messages"] == 0 and res.reports[0].details["turn_not_kept"] is None
    assert split_turn(session(3)) is None


def test_results_that_share_the_prompts_message_stay_with_their_call():
    es = session(2)[:-1]                                 # ends with the answer "File 1 looks fine."
    es[-1] = assistant([{"type": "tool_use", "id": "toolu_x", "name": "bash", "input": {}}], response_id="msg_x")
    es.append(user([tool_result_block("toolu_x", "late result"), {"type": "text", "text": PROMPT}]))
    es.append(assistant([{"type": "tool_use", "id": "toolu_y", "name": "bash", "input": {}}], response_id="msg_y"))
    es.append(user([tool_result_block("toolu_y", "turn result")]))
    before, turn = split_turn(es)
    assert before[-1].tool_result_ids() == ["toolu_x"] and before[-1].text() == ""
    assert turn[0].content == [{"type": "text", "text": PROMPT}] and turn[1:] == es[-2:]
    assert validate_history(project(before)) == [] and validate_history(project([user("s"), *turn])) == []


async def test_a_mid_turn_retry_sheds_only_what_came_before_the_turn(tmp_path):
    s = ScriptedSummarizer(SummarizeError("prompt is too long: 205000 tokens > 200000 maximum", prompt_too_long=True),
                           "<summary>1. Primary request: rename parse().</summary>")
    p = make_pipeline(tmp_path, s, llm_only=True)
    es = mid_turn()
    res = await p.run(es)
    assert len(s.calls) == 2 and TOOL_OUTPUT_LEFT_OUT in request_text(s.calls[1])
    assert [e.message for e in res.entries[-5:]] == [e.message for e in es[-5:]]   # the turn's results intact
    assert res.reports[0].details["cleared_tool_results"] > 0


async def test_keeping_the_turn_still_requires_a_smaller_history(tmp_path):
    s = ScriptedSummarizer("<summary>" + "z " * 40_000 + "</summary>")      # a summary larger than what it replaces
    p = make_pipeline(tmp_path, s, llm_only=True)
    es = mid_turn()
    res = await p.run(es)
    assert [e.uuid for e in res.entries] == [e.uuid for e in es]
    [report] = res.reports
    assert report.details["breaker"] == "rejected" and "not be smaller" in report.action
