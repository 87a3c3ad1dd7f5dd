"""read_trajectories on hand-made Claude Code logs and on a ctxtui session log made by the real loop."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_core.logs.trajectory_read import read_trajectories
from agent_core.logs.trajectory_refs import command_files
from agent_core.logs.trajectory_sizes import input_total, split

from tests.agent_helpers import collect, demo_agent

ROOT = Path(__file__).resolve().parents[3]
SESSION = "sess-1"


def usage(read=0, write=0, inp=1, out=10):
    return {"input_tokens": inp, "output_tokens": out, "cache_read_input_tokens": read,
            "cache_creation_input_tokens": write,
            "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": write}}


def answer(mid, content, u, ts):
    return {"type": "assistant", "sessionId": SESSION, "requestId": f"req-{mid}", "timestamp": ts,
            "uuid": f"a-{mid}-{len(json.dumps(content))}",
            "message": {"id": mid, "model": "claude-opus-4-6", "role": "assistant", "content": content, "usage": u}}


def user(content, ts, **extra):
    return {"type": "user", "sessionId": SESSION, "timestamp": ts, "message": {"role": "user", "content": content},
            **extra}


def result(tool_id, text, ts):
    return user([{"type": "tool_result", "tool_use_id": tool_id, "content": text}], ts)


def read_call(tool_id, path):
    return {"type": "tool_use", "id": tool_id, "name": "Read", "input": {"file_path": path}}


def write(path: Path, records, extra_lines=()) -> Path:
    lines = [json.dumps(r) for r in records] + list(extra_lines)
    path.write_text("\n".join(lines) + "\n")
    return path


def session(tmp_path: Path) -> list[dict]:
    return [
        user("fix the parser in lib/parser.ex", "2026-02-11T20:00:00Z"),
        answer("m1", [{"type": "thinking", "thinking": "look first"}], usage(read=10_000, write=2_000, out=3),
               "2026-02-11T20:00:02Z"),
        answer("m1", [read_call("t1", "lib/parser.ex")], usage(read=10_000, write=2_000, out=120),
               "2026-02-11T20:00:03Z"),
        result("t1", "defmodule Parser do\n" * 50, "2026-02-11T20:00:04Z"),
        answer("m2", [{"type": "tool_use", "id": "t2", "name": "Bash",
                       "input": {"command": "mix test test/parser_test.exs --trace"}}],
               usage(read=11_999, write=900, out=40), "2026-02-11T20:00:10Z"),
        result("t2", "1 test, 0 failures", "2026-02-11T20:00:20Z"),
        {"type": "system", "subtype": "compact_boundary", "sessionId": SESSION, "timestamp": "2026-02-11T20:10:00Z",
         "compactMetadata": {"trigger": "manual", "preTokens": 12_950}},
        user("Summary of the conversation so far: the parser was fixed.", "2026-02-11T20:10:00Z",
             isCompactSummary=True),
        answer("m3", [{"type": "text", "text": "Done."}], usage(read=9_000, write=1_500, out=5),
               "2026-02-11T20:10:05Z"),
    ]


def test_requests_added_messages_and_final_usage(tmp_path):
    (t,) = read_trajectories(write(tmp_path / "s.jsonl", session(tmp_path)))
    assert [r.index for r in t.requests] == [0, 1, 2]
    r0, r1, r2 = t.requests
    assert r0.usage["output"] == 120                       # the last copy's count
    assert [m.kind for m in r0.added] == ["prompt"]
    assert [b["type"] for b in r0.response.blocks] == ["thinking", "tool_use"]
    assert r0.response.references == ("lib/parser.ex",)
    assert [m.kind for m in r1.added] == ["assistant", "tool_result"]
    assert r1.added[0] is r0.response
    assert r1.added[1].files == ("lib/parser.ex",) and r1.added[1].tools == ("Read",)
    assert "test/parser_test.exs" in r1.response.references
    assert t.overhead_tokens == 9_000                      # the head read right after the compaction
    assert t.head_cached_tokens == 9_000


def test_a_boundary_resets_the_context(tmp_path):
    (t,) = read_trajectories(write(tmp_path / "s.jsonl", session(tmp_path)))
    r2 = t.requests[2]
    assert r2.compaction_before is not None
    assert (r2.compaction_before.trigger, r2.compaction_before.tokens_before) == ("manual", 12_950)
    assert [m.kind for m in r2.context_after_compaction] == ["summary"]
    assert r2.added == []                                  # the last answer and result went into the summary
    contexts = list(t.contexts())
    assert [m.kind for m in contexts[2]] == ["summary"]
    assert len(contexts[1]) == 3
    for r, ctx in zip(t.requests, contexts):              # sizes add up to each logged total
        assert t.overhead_tokens + sum(m.tokens for m in ctx) == input_total(r.usage)


def test_a_corrupt_line_is_skipped_and_counted(tmp_path):
    recs = session(tmp_path)
    bad = ['{"type": "user", "message": {"role": "us', "not json at all", "[1, 2]"]
    log = write(tmp_path / "s.jsonl", recs[:3], bad)
    with log.open("a") as f:
        f.write("\n".join(json.dumps(r) for r in recs[3:]) + "\n")
    (t,) = read_trajectories(log)
    assert t.skipped_lines == 3
    assert len(t.requests) == 3


def test_an_absurd_usage_is_a_corrupt_line_not_a_crash(tmp_path):
    recs = session(tmp_path)
    recs[4]["message"]["usage"]["input_tokens"] = 10 ** 15
    (t,) = read_trajectories(write(tmp_path / "s.jsonl", recs))
    assert t.skipped_lines == 1 and len(t.requests) == 2


def test_sub_agent_and_compaction_logs_of_a_session(tmp_path):
    main = write(tmp_path / f"{SESSION}.jsonl", session(tmp_path))
    sub = tmp_path / SESSION / "subagents"
    sub.mkdir(parents=True)
    side = {"isSidechain": True, "agentId": "a1"}
    write(sub / "agent-a1.jsonl", [{**user("look up X", "2026-02-11T20:01:00Z"), **side},
                                   {**answer("s1", [{"type": "text", "text": "X is Y"}], usage(write=5_000, out=30),
                                             "2026-02-11T20:01:05Z"), **side}])
    comp = {"isSidechain": True, "agentId": "acompact-1"}
    write(sub / "agent-acompact-1.jsonl", [
        {**user("Your task is to create a detailed summary", "2026-02-11T20:09:00Z"), **comp},
        {**answer("c1", [{"type": "text", "text": "Summary " * 400}], usage(read=12_899, write=300, out=6),
                  "2026-02-11T20:10:00Z"), **comp}])
    seen = []
    trajs = read_trajectories(main, progress=lambda done, total: seen.append((done, total)))
    assert [(t.agent_id, len(t.requests)) for t in trajs] == [(None, 3), ("a1", 1)]
    main_t = trajs[0]
    (call,) = main_t.compaction_calls
    assert call.purpose == "compaction" and call.usage["cache_read"] == 12_899
    # the compaction log holds only a partial output count: the summary is sized from its text
    assert main_t.requests[2].compaction_before.summary_tokens == call.usage["output"] > 6
    assert trajs[1].requests[0].purpose == "subagent"
    total = sum(p.stat().st_size for p in (main, sub / "agent-a1.jsonl", sub / "agent-acompact-1.jsonl"))
    assert seen[-1] == (total, total)
    assert all(a[0] <= b[0] for a, b in zip(seen, seen[1:]))


def test_a_missing_path_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope"):
        read_trajectories(tmp_path / "nope.jsonl")


def test_split_is_exact_and_proportional():
    assert split(10, [1, 1, 2]) == [3, 2, 5]
    assert sum(split(1_001, [3, 7, 11])) == 1_001
    assert split(6, [0, 0]) == [3, 3]
    assert split(5, []) == []


def test_command_files_picks_file_like_words():
    assert command_files("cat lib/a.ex && mix test test/b_test.exs --trace") == ["lib/a.ex", "test/b_test.exs"]
    assert command_files("echo 'unbalanced") == []


async def test_a_ctxtui_session_log_from_the_real_loop(tmp_path):
    agent = demo_agent(ROOT, home=str(tmp_path), disable_collapse=True)
    for p in ["explore this repository", "how does compaction work?", "what does the agent loop do?",
              "explain the tools and the sandbox", "how are costs computed?"]:
        await collect(agent.run(p))
    await agent.aclose()
    logged = [json.loads(line) for line in agent.session.path.read_text().splitlines()]
    responses = {r["entry"]["response_id"] for r in logged
                 if r.get("t") == "entry" and r["entry"].get("response_id") and r["entry"].get("usage")}
    (t,) = read_trajectories(agent.session.path)
    assert t.source == "ctxtui" and t.skipped_lines == 0
    assert len(t.requests) == len(responses) > 5
    rewrites = [r for r in t.requests if r.compaction_before is not None]
    assert rewrites and all(r.sent for r in rewrites)
    assert {r.compaction_before.layer for r in rewrites} <= {"microcompact", "tool_result_budget", "session_memory",
                                                             "autocompact", "snip", "collapse"}
    for prev, r, ctx in zip(t.requests, t.requests[1:], list(t.contexts())[1:]):
        assert ctx and ctx[-1].role == "user"
        grew = input_total(r.usage) - input_total(prev.usage)
        if r.compaction_before is None and grew > 0:      # measured growth sizes what was added
            assert sum(m.tokens for m in r.added) == grew
