"""Issue 12, problem 4: session-memory compaction never cuts into the current round — the newest
user prompt and every tool result the model has not seen yet are kept verbatim, or the stage
declines so a stage that can make room runs; it never keeps 0 entries."""
from __future__ import annotations

import pytest

import asyncio
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from compaction import (ContextBudget, PipelineConfig, PipelineState, assistant, project, tool_result_block, user,
                        validate_history)
from compaction.layers import collapse
from compaction.layers import tool_result_budget as trb
from compaction.layer_context import LayerContext
from compaction.layers.session_memory import SessionMemoryStage, current_round
from compaction.accounting.tokens import count_tokens

from tests.strategies import histories, texts
from tests.compaction.autocompact_helpers import session
from tests.compaction.tool_result_helpers import ctx as trb_ctx, history
from tests.hypothesis_budget import examples


def ctx_for(entries, window, session_dir, trigger="auto"):
    cfg = PipelineConfig(budget=ContextBudget(context_window=window))
    return LayerContext(cfg, PipelineState(), session_dir, 1_700_000_000.0, count_tokens(entries), trigger, None)


def _blocks(entries, kind):
    return [b for e in entries if e.sent for b in e.content if b.get("type") == kind]


def must_keep(entries) -> tuple[list[dict], list[dict]]:
    """(the newest prompt's text blocks, the results after the last assistant message)."""
    cut, prompt = current_round(entries)
    texts_ = [b for b in entries[prompt].content if b.get("type") == "text"] if prompt is not None else []
    last_a = max((i for i, e in enumerate(entries) if e.sent and e.role == "assistant"), default=-1)
    unseen = _blocks(entries[last_a + 1:], "tool_result")
    return texts_, unseen


async def test_the_unseen_results_and_the_prompt_are_kept_even_over_the_tail_maximum(tmp_path):
    # 30 old rounds, then the current prompt and a round whose two fresh results alone exceed the
    # 4,000-token tail maximum of a 20,000 window: the old code kept 0 entries
    es = session(30, chars=400)
    prompt = "Compare a.txt with b.txt line by line."
    es += [user(prompt),
           assistant([{"type": "tool_use", "id": "ra", "name": "read_file", "input": {"path": "a.txt"}},
                      {"type": "tool_use", "id": "rb", "name": "read_file", "input": {"path": "b.txt"}}],
                     response_id="cur"),
           user([tool_result_block("ra", "alpha line\n" * 1_000), tool_result_block("rb", "beta line\n" * 1_000)])]
    out = await SessionMemoryStage()(es, ctx_for(es, 20_000, tmp_path))
    assert out is not None and out.report is not None
    assert "kept the last 0 entries" not in out.report.action
    assert validate_history(project(out.entries)) == []
    sent = [e for e in out.entries if e.sent]
    assert prompt in "".join(e.text() for e in sent)
    assert _blocks(sent, "tool_result") == es[-1].content
    assert out.report.tokens_after < ctx_for(es, 20_000, tmp_path).budget.autocompact_threshold


async def test_declines_when_the_current_round_alone_does_not_fit(tmp_path):
    es = session(10, chars=400)
    es += [user("read the big one"),
           assistant([{"type": "tool_use", "id": "big", "name": "read_file", "input": {"path": "big.txt"}}],
                     response_id="cur"),
           user([tool_result_block("big", "row of text\n" * 8_000)])]
    # the fresh result alone is over the threshold: no tail could hold it, so session memory
    # declines (the LLM stage, which can make room, runs) instead of dropping it
    assert await SessionMemoryStage()(es, ctx_for(es, 20_000, tmp_path)) is None


def test_current_round():
    es = session(2)
    n = len(es)
    assert current_round(es) == (n, n - 1)         # ends with a prompt: no unseen results
    es += [assistant([{"type": "tool_use", "id": "x", "name": "bash", "input": {"command": "ls"}}], response_id="z"),
           user([tool_result_block("x", "a b")])]
    assert current_round(es) == (n, n - 1)         # the round of the unseen result starts at its call


@settings(max_examples=examples(150), deadline=None)
@given(histories(min_rounds=1, max_rounds=25), st.sampled_from([2_000, 8_000, 20_000, 200_000]),
       st.booleans(), texts, st.sampled_from(["auto", "manual", "reactive"]))
@pytest.mark.slow
def test_session_memory_never_drops_the_current_round(entries, window, with_prompt, prompt, trigger):
    if with_prompt and entries[-1].role == "assistant" and not entries[-1].tool_use_ids():
        entries = [*entries, user(prompt)]
    want_texts, want_results = must_keep(entries)
    with tempfile.TemporaryDirectory() as d:
        out = asyncio.run(SessionMemoryStage()(entries, ctx_for(entries, window, Path(d), trigger)))
    if out is None or out.entries is entries or (out.report and out.report.details.get("failed")):
        return
    assert validate_history(project(out.entries)) == []
    assert "kept the last 0 entries" not in out.report.action
    sent = [e for e in out.entries if e.sent]
    kept_blocks = [b for e in sent for b in e.content]
    for b in want_texts + want_results:
        assert b in kept_blocks


# --- issue 12, problem 5: collapse keeps the user's words -----------------------------------------

def test_a_collapse_digest_keeps_every_user_message_and_names_files_and_commands():
    asks = [f"Please rename parse_{k} to read_{k} everywhere and keep the old one as a deprecated alias {k}."
            for k in range(8)]
    span = []
    for k, ask in enumerate(asks):
        span += [user(ask),
                 assistant([{"type": "tool_use", "id": f"b{k}", "name": "bash",
                             "input": {"command": f"pytest tests/test_{k}.py -q"}},
                            {"type": "tool_use", "id": f"r{k}", "name": "read_file",
                             "input": {"path": f"src/pkg/module_{k}.py"}}], response_id=f"m{k}"),
                 user([tool_result_block(f"b{k}", "ok\nexit code 0"), tool_result_block(f"r{k}", "x = 1")])]
    d = collapse.digest(span, 1, 8)
    assert all(f"“{a}”" in d for a in asks)
    assert "src/pkg/module_0.py" in d and "`pytest tests/test_0.py -q` (exit 0)" in d
    long = "BEGIN " + "word " * 3_000 + " END"
    d = collapse.digest([user(long)], 1, 1)
    assert d.count("BEGIN") == 1 and "END”" in d and "characters left out here" in d and len(d) < 4_500


# --- a round of many parallel reads is bounded before it reaches the summarizing stages -----------

def test_many_parallel_reads_count_towards_the_message_total(tmp_path):
    big = "line of text\n" * 3_800   # ~49,000 characters: under read_file's own cap at 200,000
    es = history(*[(f"r{k}", "read_file", big) for k in range(6)])    # ~296,000 in one message
    res = trb.apply(es, trb_ctx(es, session_dir=tmp_path))
    total = sum(len(b["content"]) for b in res.entries[-1].content)
    assert total <= 200_000 and (tmp_path / "tool-results").is_dir()
    one = history(("r", "read_file", big))
    assert trb.apply(one, trb_ctx(one, session_dir=tmp_path)).entries is one   # alone: left as it is
