"""The offline demo model's answers: deterministic, streamed in small chunks, a multi-step
exploration with valid tool calls that ends in a markdown answer, whatever the prompt or history.

The workspace, the tool runner and the tiny loop are in demo_model_helpers.py; what a prompt asks it
to do (write, edit, read a folder, compact) is tested in test_demo_tasks.py, its usage, prefix cache
and limits in test_demo_usage.py.
"""
from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_core.providers.demo.model import DemoModel, chunks
from agent_core.events import TextDelta
from agent_core.tool_spec import TOOL_NAMES
from compaction.validate import validate_history
from tests.agent_core.providers.demo_model_helpers import (SUMMARY_ASK, SYSTEM, TOOLS, Runner, call, calls_of,
                                                           check_input, demo_workspace, turn)
from tests.hypothesis_budget import examples


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return demo_workspace(tmp_path)


def test_info_and_defaults(ws):
    m = DemoModel(ws)
    info = m.info
    assert (info.provider, info.model, info.context_window, info.max_output_tokens) == ("demo", "demo", 30_000, 4_000)
    assert m.info.offline and m.info.notes == ["demo — offline"]
    with pytest.raises(ValueError, match="context_window"):
        DemoModel(ws, context_window=10)


async def test_same_inputs_give_same_outputs(ws):
    async def session():
        model, msgs, out = DemoModel(ws, seed=3), [], []
        for p in ("how are tokens counted?", "explain the cache"):
            for r in await turn(model, msgs, p, Runner(ws)):
                out.append((r.id, r.content, r.usage, r.stop_reason))
        _, summary = await call(model, msgs + [{"role": "user", "content": SUMMARY_ASK}], tools=[],
                                purpose="compaction")
        return out, summary.content, msgs

    a, b = await session(), await session()
    assert a == b
    other = DemoModel(ws, seed=4)
    msgs: list[dict] = []
    await turn(other, msgs, "how are tokens counted?", Runner(ws))
    assert msgs != a[2][:len(msgs)], "the seed changes the exploration"


async def test_streams_text_in_small_chunks_then_one_response(ws):
    m = DemoModel(ws, chunk_delay=0.001)
    deltas, resp = await call(m, [{"role": "user", "content": "explore this repository"}])
    text = resp.content[0]["text"]
    assert resp.content[0]["type"] == "text" and "".join(deltas) == text
    assert len(deltas) > 3 and all(1 <= len(d.split()) <= 5 for d in deltas)
    assert re.fullmatch(r"msg_demo_\d+", resp.id) and resp.model == "demo"
    assert "".join(chunks("  a b\n\n```\n  code\n```\n")) == "  a b\n\n```\n  code\n```\n"


async def test_exploration_is_multi_step_parallel_and_ends_with_markdown(ws):
    m, msgs, run = DemoModel(ws), [], Runner(ws)
    responses = await turn(m, msgs, "How are tokens counted and cached?", run)
    assert len(responses) >= 3 and responses[-1].stop_reason == "end_turn"
    assert all(r.stop_reason == "tool_use" for r in responses[:-1])
    first = [b["name"] for b in responses[0].content if b["type"] == "tool_use"]
    assert first[0] == "glob"
    names = [b["name"] for b in calls_of(responses)]
    assert {"glob", "read_file", "grep"} <= set(names)
    assert any(sum(b["type"] == "tool_use" for b in r.content) >= 2 for r in responses), "parallel calls"
    read = {b["input"]["path"] for b in calls_of(responses) if b["name"] == "read_file"}
    assert "src/tokens.py" in read or "src/cache.py" in read, read
    final = responses[-1].content[0]["text"]
    assert final.startswith("## ") and "\n- `" in final and "\n```python\n" in final
    assert any(p in final for p in read)
    for b in calls_of(responses):
        check_input(b["name"], b["input"])
    assert not any(n in ("write_file", "edit_file") for n in names)
    assert not any(".hidden" in str(b["input"]) for b in calls_of(responses))
    assert validate_history(msgs) == []


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(prompt=st.text(min_size=1, max_size=80).filter(lambda s: s.strip()), seed=st.integers(0, 5))
def test_any_prompt_gives_valid_tool_inputs_and_ends(ws, prompt, seed):
    async def go():
        m, msgs = DemoModel(ws, seed=seed), []
        responses = await turn(m, msgs, prompt, Runner(ws, fail={"read_file"}))
        for b in calls_of(responses):
            assert b["name"] in TOOL_NAMES
            check_input(b["name"], b["input"])
        assert responses[-1].stop_reason == "end_turn"
        assert all(b["type"] == "text" and b["text"].strip() for r in responses for b in r.content[:1])
    asyncio.run(go())


async def test_repeated_prompts_read_new_files(ws):
    m, msgs = DemoModel(ws), []
    seen: list[set[str]] = []
    for _ in range(2):
        responses = await turn(m, msgs, "explore this repository", Runner(ws))
        seen.append({b["input"]["path"] for b in calls_of(responses) if b["name"] == "read_file"})
    assert seen[0] and seen[1] and not seen[0] & seen[1]


async def test_reacts_to_errors_by_trying_something_else(ws):
    m, msgs = DemoModel(ws), []
    run = Runner(ws, fail={"glob"})
    responses = await turn(m, msgs, "how is the session stored?", run)
    assert run.log[0][0] == "glob" and run.log[0][2]
    second = responses[1]
    assert "failed" in second.content[0]["text"]
    assert any(b["name"] == "bash" and b["input"]["command"] == "ls" for b in second.content if b["type"] == "tool_use")
    assert responses[-1].stop_reason == "end_turn"
    assert "Problems along the way" in responses[-1].content[0]["text"]

    run = Runner(ws, fail={"read_file"})
    responses = await turn(m, msgs, "explain the parser", run)
    failed = next(i for n, i, e in run.log if n == "read_file" and e)
    later = [b["input"]["path"] for r in responses[2:] for b in r.content
             if b["type"] == "tool_use" and b["name"] == "read_file"]
    assert later and failed["path"] not in later


async def test_only_offered_tools_and_no_tools_answers_directly(ws):
    m = DemoModel(ws)
    only_read = [t for t in TOOLS if t["name"] in ("read_file", "grep")]
    responses = await turn(m, [], "what does the budget module do?", Runner(ws), tools=only_read)
    assert {b["name"] for b in calls_of(responses)} <= {"read_file", "grep"}
    assert responses[-1].stop_reason == "end_turn"
    _, resp = await call(m, [{"role": "user", "content": "hello"}], tools=[])
    assert resp.stop_reason == "end_turn" and len(resp.content) == 1 and "No tools" in resp.content[0]["text"]


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries=__import__("tests.strategies", fromlist=["histories"]).histories(max_rounds=12),
       purpose=st.sampled_from(["main", "compaction", "memory"]))
def test_any_valid_history_gets_a_valid_answer(ws, entries, purpose):
    """Histories with other models' calls (odd inputs, big results, unanswered last calls)."""
    from compaction.entry import project

    messages = project(entries)

    async def go():
        _, r = await call(DemoModel(ws, context_window=1_000_000), messages, max_tokens=4_000, purpose=purpose)
        assert r.content and r.content[0]["type"] == "text" and r.content[0]["text"].strip()
        for b in r.content[1:]:
            assert b["type"] == "tool_use"
            check_input(b["name"], b["input"])
        assert validate_history(messages + [{"role": "assistant", "content": r.content}]) == [] \
            or messages[-1]["role"] == "assistant"
        if purpose == "compaction":
            assert "9. Optional Next Step:" in r.content[0]["text"]
    asyncio.run(go())


async def test_the_answer_summarises_what_it_read_instead_of_quoting_it(ws):
    """Issue 14: answers quoted four 50-line excerpts, so a small window ended turns blocked.
    Now two passages of 30 lines at most."""
    m, msgs, run = DemoModel(ws), [], Runner(ws)
    responses = await turn(m, msgs, "How are tokens counted and cached?", run)
    final = responses[-1].content[0]["text"]
    fences = final.count("```") // 2
    quoted = re.findall(r"```[a-z]*\n(.*?)```", final, re.S)
    assert fences <= 2 and all(len(q.splitlines()) <= 30 for q in quoted), final
    read_lines = max(len(r["content"].splitlines()) for msg in msgs if msg["role"] == "user" and
                     isinstance(msg["content"], list) for r in msg["content"] if r.get("type") == "tool_result")
    assert read_lines > 30    # a file longer than a passage was read: a whole-file quote would show
    assert "### Files examined" in final and "### Next steps" in final


async def test_pacing_changes_timing_only(ws):
    """The TUI's pace (latency, a delay per chunk) streams the same words and the same answer."""
    msgs = [{"role": "user", "content": "explain the store"}]
    fast = DemoModel(ws)
    slow = DemoModel(ws)
    slow.pace(0.001, 0.001)
    assert (slow.chunk_delay, slow.latency) == (0.001, 0.001)
    a = [x async for x in fast.stream(system=SYSTEM, messages=msgs, tools=TOOLS, max_tokens=4_000)]
    b = [x async for x in slow.stream(system=SYSTEM, messages=msgs, tools=TOOLS, max_tokens=4_000)]
    assert [x.text for x in a if isinstance(x, TextDelta)] == [x.text for x in b if isinstance(x, TextDelta)]
    assert a[-1].content == b[-1].content
    with pytest.raises(ValueError):
        DemoModel(ws, latency="slow")   # a bad value is refused, not slept on
