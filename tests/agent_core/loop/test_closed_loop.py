"""The closed loop of issue 25, small: the real agent against the fake server, a scripted model that
answers a question from the request when the fact is there and re-reads the file when it is not
(tests/closed_loop_agent.py). These check the harness measures what it says — so `bench/closed_loop.py`'s
figures can be trusted — and that a window that holds everything costs no re-work."""
from __future__ import annotations

import asyncio
import math

import pytest

from agent_core.pricing.cost import price_buckets, usage_buckets
from tests.closed_loop_agent import (READ_TOOL, VARIANTS, ScriptedModel, Step, SummaryStyle, build_workspace,
                                     history_problems, plan_prompts, run_session)
from tests.fake_anthropic import SUMMARY_SECTIONS

SMALL = {"files": 12, "questions": 4, "min_gap": 6, "max_gap": 10}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Three sessions, each run once for the module (about 1–2.5 s each): a window that holds
    every file, a tiny one with auto-compact off (collapse and snip act), and a tiny one where
    nothing compacts (the blocking limit refuses the later prompts)."""
    cases = {"big": (200_000, VARIANTS["ctxtui"]), "tiny": (8_000, VARIANTS["no-autocompact"]),
             "none": (8_000, VARIANTS["none"])}
    return {name: asyncio.run(run_session(tmp_path_factory.mktemp(name), window=w, settings=s, variant=name, **SMALL))
            for name, (w, s) in cases.items()}


def test_the_plan_asks_each_question_about_a_file_read_within_the_gap(tmp_path):
    files = build_workspace(tmp_path, 24, seed=3)
    steps = plan_prompts(files, 16, seed=3)
    assert len(steps) == 40 and sum(s.kind == "ask" for s in steps) == 16
    assert {s.file.path for s in steps if s.kind == "read"} == {f.path for f in files}
    read_at = {s.file.path: i for i, s in enumerate(steps) if s.kind == "read"}
    for i, s in enumerate(steps):
        if s.kind == "ask":
            assert 2 <= i - read_at[s.file.path] == s.gap <= 12
    assert len({s.file.path for s in steps if s.kind == "ask"}) == 16          # never the same file twice
    assert plan_prompts(build_workspace(tmp_path / "again", 24, seed=3), 16, seed=3) == steps   # deterministic
    for f in files:
        text = (tmp_path / f.path).read_text()
        assert text.splitlines()[0] == f"FACT: {f.fact}" and 5 * 1024 <= f.size <= 20 * 1024 + 200
        assert text.count(f.code) == 1                  # the fact is only on the first line


def test_the_model_answers_from_the_request_or_reads_again(tmp_path):
    f = build_workspace(tmp_path, 1)[0]
    model = ScriptedModel([Step("ask", f, "q?", 3)])
    model.step = 0
    held = {"model": "m", "messages": [{"role": "user", "content": f"earlier: FACT: {f.fact}"},
                                       {"role": "assistant", "content": "ok"}, {"role": "user", "content": "q?"}]}
    assert f.fact in model(held)["content"][0]["text"] and model.outcomes[0].how == "context"
    model = ScriptedModel([Step("ask", f, "q?", 3)])
    model.step = 0
    forgot = {"model": "m", "messages": [{"role": "user", "content": "q?"}]}
    call = model(forgot)["content"][-1]
    assert call["type"] == "tool_use" and call["name"] == READ_TOOL and call["input"] == {"path": f.path}
    missing = {"model": "m", "messages": [*forgot["messages"], {"role": "assistant", "content": [call]},
                                           {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t",
                                                                         "content": "no such file"}]}]}
    assert "lost" in model(missing)["content"][0]["text"] and model.outcomes[0].how == "lost"


def test_a_summary_keeps_prompts_and_paths_not_contents(tmp_path):
    f = build_workspace(tmp_path, 1)[0]
    steps = [Step("read", f, "Read it please.")]
    body = {"model": "m", "messages": [
        {"role": "user", "content": "Read it please."},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": READ_TOOL,
                                           "input": {"path": f.path}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": f"FACT: {f.fact}"},
                                     {"type": "text", "text": "Summarize the conversation inside <summary> tags."}]}]}
    plain = ScriptedModel(steps)(body)["content"][0]["text"]
    assert "Read it please." in plain and f.path in plain and f.fact not in plain
    assert all(name in plain for name in SUMMARY_SECTIONS)
    assert f.fact in ScriptedModel(steps, SummaryStyle(facts=True))(body)["content"][0]["text"]


def test_every_question_is_counted_once(runs):
    for run in runs.values():
        f = run.figures
        assert f.answered + f.rereads + f.lost == f.questions == SMALL["questions"], f
        assert f.prompts == SMALL["files"] + SMALL["questions"] and 0 <= f.prompts_kept <= f.prompts


def test_a_window_that_holds_everything_costs_no_rework(runs):
    f = runs["big"].figures
    assert (f.answered, f.rereads, f.lost, f.errors, f.refused) == (SMALL["questions"], 0, 0, 0, 0), f
    assert f.compactions == {} and f.prompts_kept == f.prompts
    assert f.requests == 2 * SMALL["files"] + f.questions    # a read is a call and an answer, a question one answer


def test_a_tiny_window_with_compaction_forces_rereads(runs):
    f = runs["tiny"].figures
    assert f.compactions and f.rereads >= 1 and f.lost == 0, f
    # each re-read is one more round trip, each summary one more call
    assert f.requests == 2 * SMALL["files"] + f.questions + f.rereads + f.summaries + f.pages, f


def test_with_nothing_compacting_the_blocked_questions_are_lost(runs):
    f = runs["none"].figures
    assert f.compactions == {} and f.lost >= 1 and f.error_kinds.get("blocking", 0) >= 1, f
    assert f.prompts_kept < f.prompts             # the prompts after the block never reached a request


def test_the_history_stays_valid(runs):
    for name, run in runs.items():
        assert run.entries and history_problems(run) == [], name


def test_the_dollars_are_the_reported_usage_priced(runs):
    for name, run in runs.items():
        f = run.figures
        priced = [price_buckets(run.model, usage_buckets(u)) for u in run.usages]
        assert None not in priced and len(priced) == f.requests == f.calls_booked, name
        assert f.dollars > 0 and math.isclose(f.dollars, sum(priced), rel_tol=1e-9), (name, f.dollars, sum(priced))
        assert any(u["cache_read_input_tokens"] for u in run.usages)    # the fake's prefix cache was used
