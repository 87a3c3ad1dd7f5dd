"""Session notes (deterministic, incremental, JSON) and session-memory compaction (layer 5)."""
from __future__ import annotations

import copy
import json

from compaction import (ContextBudget, PipelineConfig, PipelineState, SummarizeConfig, assistant, boundary, project,
                        read_transcript, tool_result_block, user, validate_history)
from compaction.layer_context import LayerContext
from compaction.layers.session_memory import SessionMemoryStage, SessionNotes, exit_code, keep_start, safe_cuts
from compaction.accounting.tokens import estimate_text

from tests.compaction.autocompact_helpers import WINDOW, ScriptedSummarizer, make_pipeline, session


def call(tid: str, name: str, **inp) -> dict:
    return {"type": "tool_use", "id": tid, "name": name, "input": inp}


def work_session():
    return [
        user("Fix the failing test in tests/test_parser.py"),
        assistant([{"type": "text", "text": "I'll run the tests first."}, call("a", "bash", command="pytest -q")],
                  response_id="r1"),
        user([tool_result_block("a", "F.\n1 failed, 1 passed\nexit code 1", is_error=True)]),
        assistant([call("b", "read_file", path="src/parser.py")], response_id="r2"),
        user([tool_result_block("b", "def parse(s):\n    return s.split(',')\n")]),
        assistant([call("c", "edit_file", path="src/parser.py", old_string="','", new_string="';'")],
                  response_id="r3"),
        user([tool_result_block("c", "edited src/parser.py")]),
        assistant([call("d", "bash", command="pytest -q")], response_id="r4"),
        user([tool_result_block("d", "..\n2 passed\nexit code 0")]),
        assistant("Decided to keep the comma API and accept semicolons instead of renaming it. Tests pass.",
                  response_id="r5"),
        user("Great, now add a docstring."),
    ]


def test_notes_record_requests_files_commands_errors_and_decisions():
    notes = SessionNotes({})
    assert notes.is_empty()
    notes.update(work_session())
    s = notes.s
    assert [r for r in s["requests"]] == ["Fix the failing test in tests/test_parser.py", "Great, now add a docstring."]
    assert s["files_read"]["src/parser.py"]["count"] == 1
    assert s["files_changed"]["src/parser.py"]["ops"] == {"edit_file": 1}
    assert [(c["command"], c["exit"]) for c in s["commands"]] == [("pytest -q", "1"), ("pytest -q", "0")]
    [err] = s["errors"]
    assert err["tool"] == "bash" and "1 failed" in err["error"] and err["fixed"]
    assert any("keep the comma API" in d for d in s["decisions"])
    assert "Tests pass" in s["current"]["text"]
    text = notes.render()
    for needle in ("Fix the failing test", "src/parser.py", "`pytest -q` → 1", "fixed", "Decisions", "Current work"):
        assert needle in text
    assert not notes.is_empty()


def test_exit_codes():
    assert exit_code("out\nexit code 2", True) == "2"
    assert exit_code("echo 'exit code 0'\n...\nexit code 3", True) == "3"      # the last one
    assert exit_code("[exit 127]", True) == "127"
    assert exit_code("no code here", False) == "ok" and exit_code("boom", True) == "error"


def test_update_is_incremental_and_survives_rewrites():
    es = work_session()
    notes = SessionNotes({})
    assert notes.update(es[:5]) == 5
    assert notes.update(es[:5]) == 0
    assert notes.update(es) == len(es) - 5
    # a compaction replaced the history: the scan stops at the newest known entry, only the new one is processed
    rewritten = [boundary("auto", 1, 1, None, "x"), user("summary", kind="summary")] + es[-2:] + [user("next step?")]
    before = copy.deepcopy(notes.s)
    assert notes.update(rewritten) == 1
    assert notes.s["requests"][-1] == "next step?"
    assert len(notes.s["requests"]) == len(before["requests"]) + 1      # no request counted twice


def test_old_user_messages_kept_by_an_llm_compaction_are_not_taken_twice():
    es = work_session()
    for i in range(100):              # a long agentic run: the last user message is far behind
        es.append(assistant([call(f"x{i}", "bash", command="true")], response_id=f"x{i}"))
        es.append(user([tool_result_block(f"x{i}", "exit code 0")]))
    notes = SessionNotes({})
    notes.update(es)
    requests = list(notes.s["requests"])
    kept = [e for e in es if e.role == "user" and e.text().strip()]
    compacted = ([boundary("auto", 1, 1, None, "autocompact"), user("summary", kind="summary")] + kept
                 + [user("<file>", kind="attachment", path="a.py")])
    assert notes.update(compacted) == 1                 # the attachment only
    assert notes.update(compacted + [user("and a test")]) == 1
    assert notes.s["requests"] == requests + ["and a test"]


def test_notes_are_json_and_a_resume_gives_the_same_notes():
    es = work_session()
    a = SessionNotes({})
    a.update(es[:6])
    resumed = SessionNotes(json.loads(json.dumps(a.s)))
    a.update(es)
    resumed.update(es)
    assert a.s == resumed.s and a.render() == resumed.render()


def test_render_respects_its_budget_and_keeps_the_first_request():
    notes = SessionNotes({})
    es = [user("THE ORIGINAL TASK")]
    for i in range(300):
        es.append(assistant([{"type": "text", "text": f"I'll try approach number {i} for the module."},
                             call(f"t{i}", "bash", command=f"make step{i}")], response_id=f"m{i}"))
        es.append(user([tool_result_block(f"t{i}", f"failure {i}\nexit code 1", is_error=True),
                        {"type": "text", "text": f"please keep going {i}"}]))
    notes.update(es)
    assert len(notes.s["commands"]) == 40 and len(notes.s["errors"]) == 30          # capped
    text = notes.render(600)
    # the requests have a budget of their own (here the same 600), the rest its 600
    assert estimate_text(text) <= 1_200 + 20
    assert "THE ORIGINAL TASK" in text and "please keep going 299" in text
    assert "please keep going 10\n" not in text and "make step0`" not in text      # the oldest went
    assert "I'll try approach number 299" in text                                   # the current work stays


def test_render_keeps_every_request_verbatim_within_their_own_budget():
    long = "Rename every helper.\n" + "Keep the alias and the docstring intact. " * 150      # ~6,000 characters
    es = [user("THE ORIGINAL TASK"), user(long)]
    for i in range(60):
        es.append(assistant([call(f"t{i}", "bash", command=f"make step{i} " + "x" * 200)], response_id=f"m{i}"))
        es.append(user([tool_result_block(f"t{i}", "exit code 0")]))
        es.append(user(f"request {i}:\n  indented line\n\tand a tab"))
    notes = SessionNotes({})
    notes.update(es)
    text = notes.render(300, 100_000)
    for i in range(60):
        assert f"request {i}:\n  indented line\n\tand a tab" in text     # word for word, whitespace too
    assert long[:2_500] in text and long[-1_000:] in text and long not in text   # a very long one: head and tail
    assert "characters left out here" in text
    assert text.count("make step") < 60                                    # the rest stayed within its budget
    few = notes.render(300, 200)
    assert "THE ORIGINAL TASK" in few and "request 59" in few and "request 0:" not in few


# --- where the verbatim tail starts -------------------------------------------------------------

def test_safe_cuts_never_split_a_tool_pair_or_a_response():
    es = [user("a"),
          assistant("thinking out loud", response_id="r1"),
          assistant([call("t1", "bash", command="ls")], response_id="r1"),
          user([tool_result_block("t1", "x")]),
          assistant("done", response_id="r2"),
          user("b")]
    assert safe_cuts(es) == [True, True, False, False, True, True, True]


def test_keep_start_meets_the_minimums_within_the_maximum():
    es = session(40)
    start = keep_start(es, 1_000, 5, 4_000)
    tail = es[start:]
    tokens = sum(e.tokens for e in tail)
    assert 1_000 <= tokens <= 4_000
    assert sum(1 for e in tail if e.text().strip()) >= 5
    assert safe_cuts(es)[start]
    assert validate_history(project([user("summary")] + tail)) == []


def test_keep_start_moves_forward_when_going_back_would_pass_the_maximum():
    es = [user("go"), assistant([call("t", "bash", command="x")], response_id="r"),
          user([tool_result_block("t", "z" * 40_000)]), assistant("ok", response_id="r2"), user("next")]
    # the big result alone exceeds the maximum, so it cannot be kept with its call
    start = keep_start(es, 1_000, 5, 4_000)
    assert start == 3 and safe_cuts(es)[start]


def test_keep_start_does_not_pass_the_last_boundary():
    es = [user("old"), boundary("auto", 1, 1, None, "x"), user("summary", kind="summary"), user("new")]
    assert keep_start(es, 10**6, 50, 10**7) == 2


# --- the stage ----------------------------------------------------------------------------------

def ctx_for(entries, window=WINDOW, trigger="auto", instructions=None, session_dir=None, state=None):
    cfg = PipelineConfig(budget=ContextBudget(context_window=window))
    from compaction.accounting.tokens import count_tokens
    return LayerContext(cfg, state or PipelineState(), session_dir, 1_700_000_000.0, count_tokens(entries),
                        trigger, instructions)


async def test_notes_become_the_summary_with_a_verbatim_tail(tmp_path):
    es = session(32)
    stage = SessionMemoryStage()
    ctx = ctx_for(es, session_dir=tmp_path)
    out = await stage(es, ctx)
    new = out.entries
    assert validate_history(project(new)) == []
    b, summary = new[0], new[1]
    assert b.kind == "compact_boundary" and b.meta["layer"] == "session_memory"
    assert summary.kind == "summary" and "Please fix the parser bug" in summary.text()
    assert b.meta["transcript_path"] in summary.text()
    files = [e for e in new[2:] if e.kind == "attachment"]
    tail = new[2 + len(files):]
    assert [e.uuid for e in tail] == [e.uuid for e in es[-len(tail):]]
    assert all(e.kind != "attachment" for e in tail)
    # the files read most recently before the tail come back (reinject's budgets, scaled to the window)
    assert out.report.details["files"] == [f.meta["path"] for f in files]
    assert 1_000 <= sum(e.tokens for e in tail) <= 4_000                 # 10k–40k scaled to a 20k window
    assert sum(1 for e in tail if e.text().strip()) >= 5
    assert out.report.tokens_after == sum(e.tokens for e in new) < ctx.budget.autocompact_threshold <= ctx.tokens
    assert [e.uuid for e in read_transcript(b.meta["transcript_path"])] == [e.uuid for e in es]


async def test_window_scaling_keeps_cc_numbers_for_large_windows(tmp_path):
    es = session(200, chars=1_000)             # ~60k tokens
    out = await SessionMemoryStage()(es, ctx_for(es, window=200_000, trigger="manual", session_dir=tmp_path))
    tail = out.entries[2:]
    assert 10_000 <= sum(e.tokens for e in tail) <= 40_000


async def test_falls_back_when_notes_are_empty_focus_given_or_still_too_big(tmp_path):
    stage = SessionMemoryStage()
    # no notes: the user sent only an image, and no tool ran
    es = [user([{"type": "image", "source": {}}]), assistant("x", response_id="r")]
    assert await stage(es, ctx_for(es, session_dir=tmp_path)) is None
    big = session(32)
    assert await stage(big, ctx_for(big, instructions="focus", session_dir=tmp_path)) is None
    # the tail it must keep is above the threshold: decline
    cfg = SummarizeConfig(sm_min_tokens=17_000, sm_max_tokens=19_000)
    assert await SessionMemoryStage(cfg)(big, ctx_for(big, session_dir=tmp_path)) is None
    assert not (tmp_path / "transcripts").exists()                    # declined before writing anything


async def test_pipeline_falls_back_to_the_llm_stage(tmp_path):
    s = ScriptedSummarizer()
    p = make_pipeline(tmp_path, s, config=SummarizeConfig(sm_min_tokens=17_000, sm_max_tokens=19_000))
    res = await p.run(session(32))
    assert len(s.calls) == 1 and res.entries[0].meta["layer"] == "autocompact"


async def test_pipeline_keeps_notes_current_every_turn(tmp_path):
    p = make_pipeline(tmp_path, ScriptedSummarizer())
    es = work_session()
    await p.run(es[:3])
    assert p.state.of("session_memory")["commands"][0]["exit"] == "1"
    await p.run(es)
    assert len(p.state.of("session_memory")["commands"]) == 2
    json.dumps(p.state.to_dict())


def test_notes_record_searches_that_found_something():
    es = [user("Where is the parser configured?"),
          assistant([call("g", "grep", pattern="def configure_parser")], response_id="g1"),
          user([tool_result_block("g", "src/parser.py:12: def configure_parser(opts):")]),
          assistant([call("h", "glob", pattern="src/**/*.toml")], response_id="g2"),
          user([tool_result_block("h", "no such directory", is_error=True)])]
    notes = SessionNotes({})
    notes.update(es)
    assert notes.s["searches"] == ["grep `def configure_parser`"]      # the failed glob is an error instead
    text = notes.render()
    assert "## Searches\n- grep `def configure_parser`" in text and "src/**/*.toml" in text
