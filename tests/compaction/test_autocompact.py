"""LLM compaction (layer 6), manual and reactive compaction (7, 8), blocking, with a scripted summarizer."""
from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from compaction import (ContextBudget, Entry, Pipeline, PipelineConfig, assistant, project, read_transcript,
                        tool_result_block, user, validate_history)
from compaction import summarizing
from compaction.layers.autocompact import recent_user_messages, summary_request
from compaction.reinject import recent_reads, reinject
from compaction.summary_prompt import SECTIONS, build_summary_prompt, format_summary, looks_like_error
from tests.compaction.autocompact_helpers import SUMMARY, WINDOW, ScriptedSummarizer, make_pipeline, session


def valid(entries) -> bool:
    return validate_history(project(entries)) == []


# --- the prompt ---------------------------------------------------------------------------------

def test_prompt_has_nine_sections_an_analysis_block_and_the_focus():
    p = build_summary_prompt("the failing parser test")
    assert len(SECTIONS) == 9
    for i, (name, _) in enumerate(SECTIONS, 1):
        assert f"{i}. {name}" in p
    assert "<analysis>" in p and "<summary>" in p and "tool" in p.lower()
    assert "the failing parser test" in p
    assert "focus" not in build_summary_prompt(None)


def test_format_summary_strips_the_analysis_block():
    assert format_summary(SUMMARY).startswith("1. Primary request")
    assert "Going through" not in format_summary(SUMMARY)
    assert format_summary("<analysis>draft only") == ""
    assert format_summary("plain text summary") == "plain text summary"
    assert format_summary("<analysis>a</analysis>\n\n\n\nrest") == "rest"


@pytest.mark.parametrize("text,bad", [("", True), ("   ", True), ("API Error: 529 overloaded", True),
                                      ("Prompt is too long: 5 tokens > 4 maximum", True), ("...", True),
                                      ("1. Primary request: fix the error: in parse()", False)])
def test_error_text_is_recognised(text, bad):
    assert looks_like_error(text) is bad


def test_summary_request_is_the_main_request_then_the_prompt():
    es = session(3)
    es[1] = assistant([{"type": "text", "text": "Look"}, es[1].content[1]], response_id="msg_0a")
    es.insert(1, user([{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}]))
    es.append(assistant([{"type": "tool_use", "id": "toolu_last", "name": "bash", "input": {"command": "ls"}}],
                        response_id="last"))
    main = project(es)
    msgs = summary_request(es, "focus here")
    assert validate_history(msgs) == []
    # the conversation exactly as the main call sends it (images included: the prefix is cached) ...
    assert msgs[:len(main)] == main
    # ... then one user message: results for the pending call, and the prompt last
    assert len(msgs) == len(main) + 1 and msgs[-1]["role"] == "user"
    assert msgs[-1]["content"][-1]["text"] == build_summary_prompt("focus here")
    assert [b.get("tool_use_id") for b in msgs[-1]["content"][:-1]] == ["toolu_last"]
    assert es[0].content == [{"type": "text", "text": "Please fix the parser bug in src/parser.py"}]  # not mutated


def test_summary_prompt_is_merged_into_a_trailing_user_message():
    es = session(2)                     # ends with the user's own message
    main = project(es)
    msgs = summary_request(es, None)
    assert validate_history(msgs) == [] and len(msgs) == len(main)
    assert msgs[:-1] == main[:-1]
    assert msgs[-1]["content"] == main[-1]["content"] + [{"type": "text", "text": build_summary_prompt(None)}]
    assert project(es)[-1] == main[-1]  # the history's message is not extended in place


# --- the stage ----------------------------------------------------------------------------------

async def test_llm_compaction_builds_the_new_history(tmp_path):
    s = ScriptedSummarizer()
    p = make_pipeline(tmp_path, s, llm_only=True)
    es = session(32)
    before = p.count(es)
    assert before >= p.config.budget.autocompact_threshold
    res = await p.run(es)
    assert len(s.calls) == 1 and s.calls[0]["instructions"] is None
    assert validate_history(s.calls[0]["messages"]) == []
    new = res.entries
    assert valid(new)
    b = new[0]
    assert b.kind == "compact_boundary"
    assert b.meta["trigger"] == "auto" and b.meta["tokens_before"] == before
    assert b.meta["tokens_after"] == p.count(new) < before
    path = b.meta["transcript_path"]
    summary = new[1]
    assert summary.kind == "summary" and path in summary.text() and "Primary request" in summary.text()
    assert "Going through" not in summary.text()
    kept = [e for e in new if e.kind == "message"]
    assert kept and all(e.role == "user" for e in kept)
    assert kept[-1].text() == "Now check file 32, please."           # newest user message kept
    assert sum(e.tokens for e in kept) <= 2_000                       # 20,000 scaled to the window
    assert [e.uuid for e in kept] == [e.uuid for e in es if e.uuid in {k.uuid for k in kept}]  # original order
    files = [e for e in new if e.kind == "attachment"]
    assert [f.meta["path"] for f in files] == [f"src/f{r}.py" for r in (31, 30, 29, 28, 27)]
    [report] = res.reports
    assert report.layer == "autocompact" and report.transcript_path == path
    assert report.details["usage"]["output_tokens"] == 200


async def test_transcript_on_disk_holds_the_full_history_privately(tmp_path):
    p = make_pipeline(tmp_path, ScriptedSummarizer(), llm_only=True)
    es = session(32)
    res = await p.run(es)
    path = Path(res.entries[0].meta["transcript_path"])
    assert path.parent == tmp_path / "transcripts"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [e.to_dict() for e in read_transcript(path)] == [json.loads(json.dumps(e.to_dict())) for e in es]


async def test_failed_transcript_write_applies_nothing_and_calls_no_model(tmp_path, monkeypatch):
    def boom(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(summarizing, "write_transcript", boom)
    s = ScriptedSummarizer()
    p = make_pipeline(tmp_path, s)   # session memory first: it must not apply either
    es = session(32)
    res = await p.compact(es, trigger="manual")
    assert res.entries == es and all(a is b for a, b in zip(res.entries, es))
    assert s.calls == []
    [report] = res.reports
    assert report.details["failed"] and "No space left" in report.action
    assert not (tmp_path / "transcripts").exists() or not any((tmp_path / "transcripts").iterdir())


async def test_without_a_session_folder_nothing_is_replaced():
    s = ScriptedSummarizer()
    p = make_pipeline(None, s, llm_only=True)
    es = session(32)
    res = await p.run(es)
    assert res.entries == es and s.calls == []
    assert "session folder" in res.reports[0].action


@pytest.mark.parametrize("answer,why", [("", "empty"), ("<analysis>only a draft</analysis>", "empty"),
                                        ("API Error: 500 internal server error", "error"),
                                        ("z" * 200_000, "not be smaller")])
async def test_empty_error_or_larger_summary_is_rejected_and_history_kept(tmp_path, answer, why):
    s = ScriptedSummarizer(answer)
    p = make_pipeline(tmp_path, s, llm_only=True)
    es = session(32)
    res = await p.run(es)
    assert [e.uuid for e in res.entries] == [e.uuid for e in es]
    assert all(a is b for a, b in zip(res.entries, es))
    [report] = res.reports
    assert report.layer == "breaker" and report.details["breaker"] == "rejected" and why in report.action
    assert p.state.of("breakers")["failures"] == 1


async def test_a_stage_result_that_is_not_smaller_is_rejected_by_the_pipeline(tmp_path):
    """Whatever a stage returns, the pipeline keeps the old history when the count did not drop."""
    from compaction import CompactionReport, LayerResult

    class Bloat:
        name = "bloat"

        async def __call__(self, entries, ctx):
            return LayerResult(entries + [user("more")], CompactionReport("bloat", ctx.trigger, "x", ctx.tokens, 0))

    p = Pipeline(PipelineConfig(budget=ContextBudget(context_window=WINDOW)), tmp_path, [Bloat()], layers=([], []))
    es = session(2)
    res = await p.compact(es)
    assert res.entries == es and res.reports[0].details["breaker"] == "rejected"


async def test_manual_focus_uses_the_llm_stage_even_with_notes(tmp_path):
    s = ScriptedSummarizer()
    p = make_pipeline(tmp_path, s)
    es = session(32)
    res = await p.compact(es, trigger="manual", instructions="the parser")
    assert len(s.calls) == 1 and s.calls[0]["instructions"] == "the parser"
    assert "the parser" in s.calls[0]["messages"][-1]["content"][-1]["text"]
    assert res.entries[0].meta["layer"] == "autocompact" and res.entries[0].meta["trigger"] == "manual"
    assert "Continue the work" not in res.entries[1].text()      # manual: no auto-continue instruction
    assert valid(res.entries)


async def test_manual_without_focus_uses_session_memory_first(tmp_path):
    s = ScriptedSummarizer()
    p = make_pipeline(tmp_path, s)
    res = await p.compact(session(32), trigger="manual")
    assert s.calls == []
    assert res.entries[0].meta["layer"] == "session_memory" and valid(res.entries)


async def test_reactive_compaction_works_below_the_threshold(tmp_path):
    """The main call said prompt-too-long although our count was under the threshold."""
    s = ScriptedSummarizer()
    p = make_pipeline(tmp_path, s, llm_only=True)
    es = session(20)
    assert p.count(es) < p.config.budget.autocompact_threshold
    res = await p.compact(es, trigger="reactive")
    assert res.entries[0].meta["trigger"] == "reactive" and res.tokens < p.count(es)
    assert "Continue the work" in res.entries[1].text() and valid(res.entries)


async def test_below_the_threshold_run_does_nothing(tmp_path):
    s = ScriptedSummarizer()
    p = make_pipeline(tmp_path, s)
    es = session(5)
    res = await p.run(es)
    assert res.entries == es and res.reports == [] and s.calls == []


async def test_kept_usage_is_reanchored_so_the_count_is_truthful(tmp_path):
    es = session(32)
    # the newest assistant carries usage of the whole old context
    i = max(i for i, e in enumerate(es) if e.role == "assistant")
    es[i] = Entry(es[i].message, response_id=es[i].response_id, uuid=es[i].uuid,
                  usage={"input_tokens": 17_000, "output_tokens": 50})
    p = make_pipeline(tmp_path, ScriptedSummarizer())
    res = await p.run(es)
    assert res.entries[0].meta["layer"] == "session_memory"
    assert res.tokens == sum(e.tokens for e in res.entries) < 5_000
    kept = [e for e in res.entries if e.uuid == es[i].uuid]
    assert kept and kept[0].usage == es[i].usage         # usage itself is not lost


# --- recent user messages and re-attached files -------------------------------------------------

def test_recent_user_messages_newest_first_within_budget():
    es = [user(f"request {i} " + "w" * 400) for i in range(10)]
    es.insert(3, user([tool_result_block("t", "result")]))
    kept = recent_user_messages(es, 350)
    assert sum(e.tokens for e in kept) <= 350
    assert kept[-1].text().startswith("request 9")
    assert [e.text()[:10] for e in kept] == sorted(e.text()[:10] for e in kept)
    assert all(e.kind == "message" and not e.tool_result_ids() for e in kept)


def test_an_oversized_newest_message_is_cut_to_fit():
    kept = recent_user_messages([user("a" * 100_000)], 2_000)
    assert len(kept) == 1 and kept[0].tokens <= 2_000 and "cut to fit" in kept[0].text()


def _reads(n: int, chars: int) -> list[Entry]:
    es = [user("go")]
    for r in range(n):
        es.append(assistant([{"type": "tool_use", "id": f"r{r}", "name": "read_file", "input": {"path": f"f{r}.py"}}],
                            response_id=f"m{r}"))
        es.append(user([tool_result_block(f"r{r}", f"body {r} " + "y" * chars)]))
    return es


@pytest.mark.parametrize("chars,files,per,total", [(1_000, 5, 5_000, 50_000), (60_000, 5, 5_000, 50_000),
                                                   (60_000, 5, 5_000, 12_000), (8_000, 3, 1_000, 2_500),
                                                   (8_000, 5, 400, 100_000)])
async def test_reinjected_files_respect_every_budget(chars, files, per, total):
    es = _reads(8, chars)
    out = await reinject(es, [], max_files=files, file_tokens=per, total_tokens=total)
    assert 0 < len(out) <= files
    assert all(e.tokens <= per for e in out)
    assert sum(e.tokens for e in out) <= total
    assert [e.meta["path"] for e in out] == [f"f{r}.py" for r in range(7, 7 - len(out), -1)]
    assert all(e.kind == "attachment" for e in out)
    # a file is re-attached whole or named in a note, never cut down
    for e in out:
        r = int(e.meta["path"][1:-3])
        assert (f"body {r} " + "y" * chars) in e.text() if not e.meta.get("left_out") else "<file" not in e.text()


async def test_a_file_too_large_to_reattach_is_named_in_a_note_not_cut():
    es = _reads(4, 400)
    big = "body 2 " + "z" * 60_000                           # about 15,000 tokens: over the 5,000 a file
    es[6] = es[6].with_content([tool_result_block("r2", big)])
    out = await reinject(es, [], file_tokens=5_000, total_tokens=50_000)
    assert [e.meta["path"] for e in out] == ["f3.py", "f2.py", "f1.py", "f0.py"]
    note = out[1]
    assert note.meta.get("left_out") and note.kind == "attachment" and note.tokens < 100
    assert "f2.py" in note.text() and "read_file" in note.text() and "z" * 50 not in note.text()
    assert all(not e.meta.get("left_out") and "<file path=" in e.text() for e in out[:1] + out[2:])
    # the history with the note is valid, and a later compaction does not take the note for the file
    assert valid([user("summary"), *out, assistant("ok")])
    assert recent_reads([note])[0].content is None
    again = await reinject(es, [note], read_file=lambda p: f"small {p}")
    assert "f2.py" in [e.meta["path"] for e in again if not e.meta.get("left_out")]


async def test_a_file_over_what_is_left_of_the_total_is_left_out_too():
    es = _reads(3, 8_000)                                      # about 2,000 tokens each
    out = await reinject(es, [], file_tokens=5_000, total_tokens=4_500)
    assert [(e.meta["path"], bool(e.meta.get("left_out"))) for e in out] == [
        ("f2.py", False), ("f1.py", False), ("f0.py", True)]
    assert sum(e.tokens for e in out) <= 4_500


async def test_reinject_reads_current_contents_and_skips_gone_or_visible_files():
    es = _reads(4, 100)
    es.append(assistant([{"type": "tool_use", "id": "bad", "name": "read_file", "input": {"path": "err.py"}}],
                        response_id="mx"))
    es.append(user([tool_result_block("bad", "no such file", is_error=True)]))
    disk = {"f3.py": "NEW CONTENT 3", "f1.py": "NEW CONTENT 1", "f0.py": "NEW 0"}

    async def read_file(path):
        return disk.get(path)                      # f2.py is gone

    kept = es[3:5]                                  # the read of f1.py with its result is kept verbatim
    out = await reinject(es, kept, read_file=read_file)
    assert [e.meta["path"] for e in out] == ["f3.py", "f0.py"]
    assert "NEW CONTENT 3" in out[0].text() and out[0].meta["source"] == "current contents"


def test_recent_reads_pairs_calls_with_results_and_counts_reattachments():
    es = _reads(2, 10)
    es.append(user("<file>", kind="attachment", path="old.py"))
    recs = recent_reads(es)
    assert [r.path for r in recs] == ["old.py", "f1.py", "f0.py"]
    assert recs[1].content.startswith("body 1")


async def test_a_result_cleared_by_microcompact_is_only_reattached_from_disk():
    es = _reads(2, 10)
    es[2] = es[2].with_content([tool_result_block("r0", "[Old result of read_file cleared]")])
    assert [e.meta["path"] for e in await reinject(es, [])] == ["f1.py"]
    out = await reinject(es, [], read_file=lambda p: f"disk {p}")
    assert [e.meta["path"] for e in out] == ["f1.py", "f0.py"] and "disk f0.py" in out[1].text()


# --- blocking -----------------------------------------------------------------------------------

def test_blocked_tells_the_user_to_compact():
    p = make_pipeline(None, ScriptedSummarizer())
    limit = p.config.budget.blocking_limit
    assert p.blocked(limit - 1) is None
    msg = p.blocked(limit)
    assert msg and "/compact" in msg and f"{limit:,}" in msg and "Nothing was sent" in msg


async def test_the_count_a_summary_acts_on_is_told_before_it_runs(tmp_path):
    """`before_summary` hears the count the stages will see, once, before the summary call; a run
    under the threshold tells nothing (a front-end shows the figure while the summary is written)."""
    s = ScriptedSummarizer()
    p = make_pipeline(tmp_path, s, llm_only=True)
    told = []
    p.before_summary = lambda res: told.append((res.tokens, len(s.calls)))
    await p.run(session(5))
    assert told == []
    es = session(32)
    res = await p.run(es)
    assert told == [(p.count(es), 0)] and len(s.calls) == 1
    assert res.tokens < told[0][0]
