"""Trajectories rebuilt from the shared real Claude Code sessions (read-only; skipped when absent)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_core.logs.trajectory_read import read_trajectories

REAL = Path(__file__).resolve().parents[3] / ".." / "shared" / "reference" / "real-cc-sessions"
PROJECT = REAL / "projects" / "-home-dev-spotter"
LONG = PROJECT / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"

pytestmark = pytest.mark.skipif(not PROJECT.is_dir(), reason="shared real sessions not present")


def distinct_responses(path: Path) -> dict[str, int]:
    """An independent count: message.id + requestId of every non-synthetic assistant record, with
    the output tokens of the last copy."""
    out: dict[str, int] = {}
    for line in path.read_text().splitlines():
        obj = json.loads(line)
        msg = obj.get("message") or {}
        if obj.get("type") == "assistant" and msg.get("model") != "<synthetic>" and "usage" in msg:
            out[f"{msg['id']}:{obj.get('requestId')}"] = msg["usage"]["output_tokens"]
    return out


@pytest.fixture(scope="module")
def trajectories():
    return read_trajectories(PROJECT)


def test_every_log_is_a_trajectory_with_one_request_per_distinct_response(trajectories):
    by_path = {}
    for t in trajectories:
        by_path.setdefault(t.path, []).append(t)
    logs = [p for p in sorted(PROJECT.rglob("*.jsonl")) if not p.name.startswith("agent-acompact")]
    assert sorted(by_path) == sorted(str(p) for p in logs)
    for p in logs:
        (t,) = by_path[str(p)]
        assert len(t.requests) == len(distinct_responses(p)), p.name
        assert [r.index for r in t.requests] == list(range(len(t.requests)))
        assert all(a.timestamp <= b.timestamp + 5 for a, b in zip(t.requests, t.requests[1:]))


def test_output_tokens_are_the_final_copys(trajectories):
    main = next(t for t in trajectories if t.path == str(LONG))
    expected = list(distinct_responses(LONG).values())
    assert [r.usage["output"] for r in main.requests] == expected
    assert main.requests[0].usage["output"] == 441           # the first copies say 10


def test_sub_agent_logs_are_their_own_trajectories(trajectories):
    subs = [t for t in trajectories if t.agent_id is not None]
    assert {t.agent_id for t in subs} == {"a881341", "a7be2f0"}
    assert all(r.purpose == "subagent" for t in subs for r in t.requests)
    assert {t.session_id for t in subs} == {"258c7280-ae70-4798-800f-63464d01a85d",
                                           "8463c716-a2ea-4c14-9efa-87158ebd9f20"}


def test_the_compaction_and_its_summary_call_are_found(trajectories):
    main = next(t for t in trajectories if t.path == str(LONG))
    marked = [r for r in main.requests if r.compaction_before is not None]
    assert len(marked) == 1
    (r,) = marked
    assert r.compaction_before.tokens_before == 167_094
    assert r.compaction_before.trigger == "auto"
    assert [m.kind for m in r.context_after_compaction] == ["summary"]
    (call,) = main.compaction_calls
    assert call.purpose == "compaction"
    assert call.usage["cache_read"] == 166_758     # the summary call reads the main prefix
    assert 1_000 < r.compaction_before.summary_tokens < 10_000
    # after the boundary the context is the summary and what follows, never the old messages
    contexts = list(main.contexts())
    assert contexts[r.index][0] is r.context_after_compaction[0]


def test_sizes_add_up_to_each_requests_logged_total(trajectories):
    for t in trajectories:
        for r, ctx in zip(t.requests, t.contexts()):
            total = sum(r.usage[k] for k in ("input", "cache_write_5m", "cache_write_1h", "cache_read"))
            assert t.overhead_tokens + sum(m.tokens for m in ctx) == total, (t.path, r.index)


def test_overhead_is_the_cached_head_after_the_compaction(trajectories):
    main = next(t for t in trajectories if t.path == str(LONG))
    assert main.overhead_tokens == 21_460
    assert main.head_cached_tokens == 17_842


def test_references_come_from_tool_inputs(trajectories):
    main = next(t for t in trajectories if t.path == str(LONG))
    reads = [r.response for r in main.requests if "Read" in r.response.tools]
    assert reads and all(r.references for r in reads)
    assert any(ref.endswith(".ex") for m in reads for ref in m.references)
    results = [m for r in main.requests for m in r.added if m.kind == "tool_result" and "Read" in m.tools]
    assert results and all(m.files for m in results)
