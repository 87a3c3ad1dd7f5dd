"""References kept, content kept (and its re-read charge) and user messages kept, computed on a
tiny hand-made trajectory (`tiny`, and `reads`: tiny, then seven files read and used again)."""
from __future__ import annotations

import json

import pytest

from agent_core.logs.trajectory import Message, Request, Trajectory
from agent_core.pricing.pricer import Pricer
from agent_core.replay.content import ContentIndex
from agent_core.replay.options import PolicySpec
from agent_core.replay.policies import NoCompaction
from agent_core.replay.references import ReferenceIndex
from agent_core.replay.report import build_report, format_text, policy_result
from agent_core.replay.report_model import PolicyResult, ReplayReport, SessionResult
from agent_core.replay.runner import make_policy
from agent_core.replay.simulate import Step, simulate
from agent_core.replay.summary_size import SummarySize
from tests.agent_core.replay.replay_helpers import Recorded


def msg(kind, text, key, tokens=100, role="user", refs=(), files=(), tools=(), blocks=None):
    return Message(role, kind, tokens, key, text, references=refs, files=files, tools=tools, blocks=blocks)


def read_call(key: str, path: str, tid: str, at: float) -> Message:
    """An answer that reads `path` (Claude Code's Read), as the engine sees it."""
    return Message("assistant", "assistant", 30, key, f"reading {path}", tools=("Read",), files=(path,),
                   references=(path,), timestamp=at,
                   blocks=[{"type": "tool_use", "id": tid, "name": "Read", "input": {"file_path": path}}])


def read_result(key: str, path: str, tid: str, tokens: int = 900) -> Message:
    body = f"{path}\n" + f"a line of {path}\n" * 20
    return Message("user", "tool_result", tokens, key, body, tools=("Read",), files=(path,),
                   blocks=[{"type": "tool_result", "tool_use_id": tid, "content": body}])


def tiny() -> Trajectory:
    p1 = msg("prompt", "please fix src/app.py", "p1")
    a1 = msg("assistant", "reading", "a1", role="assistant", refs=("src/app.py",), tools=("Read",),
             files=("src/app.py",),
             blocks=[{"type": "text", "text": "reading"},
                     {"type": "tool_use", "id": "t-app", "name": "Read", "input": {"file_path": "src/app.py"}}])
    r1 = msg("tool_result", "src/app.py\ndef handle_login(): pass", "r1", tokens=900, files=("src/app.py",),
             tools=("Read",), blocks=[{"type": "tool_result", "tool_use_id": "t-app",
                                       "content": "src/app.py\ndef handle_login(): pass"}])
    a2 = msg("assistant", "editing", "a2", role="assistant", refs=("src/app.py", "handle_login", "src/new.py"))
    p2 = msg("prompt", "now the tests", "p2")
    a3 = msg("assistant", "done", "a3", role="assistant", refs=("handle_login",))
    t = Trajectory("tiny.jsonl", "s", "claude-sonnet-4-5", overhead_tokens=2_000)
    t.requests = [
        Request(0, 1000.0, t.model, [p1], a1, {"output": 10}),
        Request(1, 1010.0, t.model, [a1, r1], a2, {"output": 10}),
        Request(2, 1020.0, t.model, [a2, p2], a3, {"output": 10}),
    ]
    return t


def test_references_found_in_the_context_sent():
    t = tiny()
    r = simulate(t, NoCompaction("5m"), window=200_000, pricer=Pricer(), refs=ReferenceIndex(t))
    # request 0: src/app.py is in the prompt (1/1); request 1: src/app.py and handle_login are in the
    # read result, src/new.py nowhere (2/3); request 2: handle_login still there (1/1)
    assert (r.references_kept, r.references_total) == (4, 5)
    assert (r.user_messages_kept, r.user_messages_total) == (2, 2)


def test_a_cc_summary_keeps_the_prompt_and_the_file_it_read():
    """cc (the engine under Claude Code's preset) compacts before request 1 (3,300 window: at 3,000
    the newest round alone, with the 2,000-token head, reaches the blocking limit and the engine
    declines to summarise, b91f448): the read result comes back re-attached and the user's prompt
    stays verbatim, as Claude Code's summary keeps them; the summary's own (unwritten) content holds no reference."""
    from agent_core.replay.options import PolicySpec
    from agent_core.replay.runner import make_policy
    from agent_core.replay.summary_size import SummarySize

    def cc(t):
        return make_policy(PolicySpec("cc", "cc"), t, window=3_300, ttl="5m", size=SummarySize(50, "default", 50, 50),
                           pricer=Pricer())[0]
    t = tiny()
    r = simulate(t, cc(t), window=3_300, pricer=Pricer(), refs=ReferenceIndex(t))
    assert [m for m in r.markers if m[1] == "autocompact"] == [[1, "autocompact"]]
    assert (r.references_kept, r.references_total) == (4, 5)
    assert r.user_messages_kept >= 1


def test_reference_index_counts_each_reference_once():
    t = tiny()
    idx = ReferenceIndex(t)
    ctx = [t.requests[1].added[1], t.requests[1].added[1]]
    assert idx.found(("src/app.py", "handle_login", "src/new.py"), ctx) == 2
    assert idx.found((), ctx) == 0


# ----- content kept ---------------------------------------------------------------------------------
FILES = [f"src/f{i}.py" for i in range(7)]
LAST_USES = ("src/f0.py", "src/f2.py", "src/f6.py", "src/app.py")


def reads(gap: float = 10.0) -> Trajectory:
    """`tiny`, then the agent reads src/f0.py … src/f6.py (900 tokens each, one request each), an
    answer uses f0, f2, f6 and src/app.py, and after `gap` seconds the next prompt's answer uses
    them again."""
    t = tiny()
    ts = 1030.0
    last = t.requests[-1].response
    added = [last, msg("prompt", "read the files", "p3", tokens=50)]
    for i, path in enumerate(FILES):
        resp = read_call(f"c{i}", path, f"t{i}", ts + 2)
        t.requests.append(Request(len(t.requests), ts, t.model, added, resp, {"output": 30}))
        added = [resp, read_result(f"f{i}", path, f"t{i}")]
        ts += 10
    use = msg("assistant", "using them", "u1", tokens=30, role="assistant", refs=LAST_USES)
    use.timestamp = ts + 2
    t.requests.append(Request(len(t.requests), ts, t.model, added, use, {"output": 30}))
    again = msg("assistant", "using them again", "u2", tokens=30, role="assistant", refs=LAST_USES)
    t.requests.append(Request(len(t.requests), ts + gap, t.model, [use, msg("prompt", "again", "p4", tokens=50)],
                              again, {"output": 30}))
    return t


def engine(t: Trajectory, preset: str, window: int) -> Recorded:
    return Recorded(make_policy(PolicySpec(preset, preset), t, window=window, ttl="5m",
                                size=SummarySize(50, "default", 50, 50), pricer=Pricer())[0])


def carried(context: list[Message], path: str, read_keys: set[str]) -> str | None:
    """How `context` carries `path`'s content, by reading it: "result" (a recorded read result),
    "reread" (a re-read replay added), "attachment" (re-attached after a compaction), or None."""
    for m in context:
        if m.key in read_keys and m.kind == "tool_result" and path in m.files:
            return "result"
        if m.key.startswith("reread\x00") and m.kind == "tool_result" and path in m.files:
            return "reread"
        if m.kind == "attachment" and f'<file path="{path}">' in m.text:
            return "attachment"
    return None


def test_content_uses_are_paths_read_earlier():
    t = reads()
    uses = ContentIndex(t).uses
    assert [u.path for u in uses[1]] == ["src/app.py"]        # a2 edits the file r1 read
    assert all(not u for u in uses[3:10])                    # each Read of a new file is no use
    assert [u.path for u in uses[10]] == list(LAST_USES)
    assert {u.tokens for u in uses[10]} == {900} and all(u.charged for u in uses[10])
    assert sum(len(u) for u in uses) == 1 + 2 * len(LAST_USES)


def test_under_none_every_use_keeps_its_content():
    t = reads()
    r = simulate(t, NoCompaction("5m"), window=200_000, pricer=Pricer(), refs=ReferenceIndex(t))
    assert r.content_total == 1 + 2 * len(LAST_USES)
    assert r.content_kept == r.content_total
    assert (r.rereads, r.reread_usd) == (0, 0.0)


def test_a_cleared_result_does_not_keep_content():
    """cc at 200,000: after the hour's pause, time-based microcompact clears every read result but
    the last five (src/app.py's is too short to clear): f0's and f1's. The answer's use of f0 loses
    its content though its path is still in the context (in the Read call): the reference is kept,
    the content not."""
    t = reads(gap=3_700)
    policy = engine(t, "cc", 200_000)
    r = simulate(t, policy, window=200_000, pricer=Pricer(), refs=ReferenceIndex(t))
    assert [m for m in r.markers if m[1] == "microcompact"] == [[11, "microcompact"]]
    last = policy.sent[11]
    assert sum(1 for m in last if m.text.startswith("[Old result of")) == 2
    keys = {f"f{i}" for i in range(7)} | {"r1"}
    assert [carried(last, p, keys) for p in LAST_USES] == [None, "result", "result", "result"]
    assert (r.content_kept, r.content_total, r.rereads) == (8, 9, 1)
    assert r.reread_usd > 0
    assert ReferenceIndex(t).found(["src/f0.py"], last) == 1      # the name is still there


def test_a_compaction_keeps_content_only_where_the_file_came_back_or_stayed():
    """cc at 10,000 compacts once, before request 9 (src/app.py and f0 … f5 read): the five newest
    files come back re-attached, src/app.py and f0 do not; f6 is read after. A use keeps its
    content exactly where the context sent holds the file re-attached or its result (the test
    reads the contexts itself); the two lost at request 10 are re-read there, and request 11 holds
    them."""
    t = reads()
    policy = engine(t, "cc", 10_000)
    r = simulate(t, policy, window=10_000, pricer=Pricer(), refs=ReferenceIndex(t))
    assert r.markers == [[9, "autocompact"]]
    read_keys = {"r1"} | {f"f{i}" for i in range(7)}
    how = [(i, u.path, carried(policy.sent[i], u.path, read_keys))
           for i, uses in enumerate(ContentIndex(t).uses) for u in uses]
    assert how[:5] == [(1, "src/app.py", "result"), (10, "src/f0.py", None), (10, "src/f2.py", "attachment"),
                       (10, "src/f6.py", "result"), (10, "src/app.py", None)]
    assert [h for _, _, h in how[5:]] == ["reread", "attachment", "result", "reread"]     # request 11
    assert (r.content_kept, r.content_total) == (7, 9)
    assert (r.rereads, r.rereads_logged) == (2, 0)
    assert r.reread_events == [(10, "src/f0.py", True), (10, "src/app.py", True)]


class ClearFirstRead:
    """Sends what `none` does, but with src/app.py's read result (r1) replaced by a cleared one."""
    name, ttl = "clear", "5m"

    def __init__(self) -> None:
        self.inner = NoCompaction("5m")

    def step(self, request: Request) -> Step:
        context = [msg("other", "[Old result of read_file cleared]", "r1-cleared", tokens=10)
                   if m.key == "r1" else m for m in self.inner.step(request).context]
        return Step(context)


def test_the_reread_charge_is_one_round_trip_priced_by_hand():
    """Request 1 of `tiny` uses src/app.py, whose 900-token result was cleared: one re-read, the
    context sent (head 2,000 + p1 100 + a1 100 + the cleared result 10) read from the cache, the
    read call (100) and the file (900) written at the 5-minute rate, 100 output tokens;
    claude-sonnet-4-5 at $3/M input: reads $0.30/M, 5m writes $3.75/M, output $15/M. Not in
    cost_usd."""
    t = tiny()
    r = simulate(t, ClearFirstRead(), window=200_000, pricer=Pricer(), refs=ReferenceIndex(t))
    base = simulate(t, NoCompaction("5m"), window=200_000, pricer=Pricer(), refs=ReferenceIndex(t))
    assert (r.content_kept, r.content_total, r.rereads, r.rereads_logged) == (0, 1, 1, 0)
    assert r.reread_usd == pytest.approx(2_210 * 0.30e-6 + 1_000 * 3.75e-6 + 100 * 15e-6, rel=1e-9)
    assert r.reread_usd == pytest.approx(0.005913, abs=1e-9)
    assert r.reread_events == [(1, "src/app.py", True)]
    assert r.cost_usd < base.cost_usd          # the re-read is charged apart, not in the replayed cost


def test_an_answer_that_reads_the_file_again_is_not_charged_twice():
    """The log holds that read (and replay prices it): a lost use is a re-read, the log's own,
    and nothing is added for it."""
    t = tiny()
    again = read_call("a2", "src/app.py", "t9", 1012.0)
    t.requests[1].response = again
    t.requests[2].added[0] = again
    (use,) = ContentIndex(t).uses[1]
    assert not use.charged
    r = simulate(t, ClearFirstRead(), window=200_000, pricer=Pricer(), refs=ReferenceIndex(t))
    assert (r.content_kept, r.content_total, r.rereads, r.rereads_logged, r.reread_usd) == (0, 1, 1, 1, 0.0)
    assert r.reread_events == [(1, "src/app.py", False)]


def tiny_session(policies: dict[str, PolicyResult]) -> SessionResult:
    return SessionResult("tiny.jsonl", model="claude-sonnet-4-5", requests=3, window=200_000, policies=policies)


def test_content_kept_and_rereads_in_the_report_and_its_json():
    t = tiny()
    runs = {"none": simulate(t, NoCompaction("5m"), window=200_000, pricer=Pricer(), refs=ReferenceIndex(t)),
            "cc": simulate(t, ClearFirstRead(), window=200_000, pricer=Pricer(), refs=ReferenceIndex(t))}
    cc = policy_result(runs["cc"])
    assert (cc.content_kept, cc.content_total, cc.rereads) == (0, 1, 1)
    assert cc.net_cost_usd == pytest.approx(cc.cost_usd + cc.reread_usd, abs=1e-6)
    session = tiny_session({n: policy_result(r) for n, r in runs.items()})
    report = build_report([session], ["none", "cc"], window=None, ttl="5m", notes=[])
    assert report.totals["cc"].net_cost_usd == cc.net_cost_usd
    data = json.loads(json.dumps(report.to_json()))
    p = data["sessions"][0]["policies"]["cc"]
    assert (p["content_kept"], p["content_total"], p["rereads"]) == (0, 1, 1)
    assert p["net_cost_usd"] == cc.net_cost_usd and data["totals"]["cc"]["net_cost_usd"] == cc.net_cost_usd
    back = ReplayReport.from_json(data)
    assert back == report
    text = format_text(report)
    assert "net÷cc" in text and "0/1" in text and "net of re-reads" in text
    assert max(len(line) for line in text.splitlines()) < 100


def test_a_report_saved_before_content_kept_still_loads():
    t = tiny()
    session = tiny_session({"cc": policy_result(
        simulate(t, NoCompaction("5m"), window=200_000, pricer=Pricer(), refs=ReferenceIndex(t)))})
    data = build_report([session], ["cc"], window=None, ttl="5m", notes=[]).to_json()
    for key in ("content_kept", "content_total", "rereads", "reread_usd", "net_cost_usd"):
        del data["sessions"][0]["policies"]["cc"][key]
    del data["totals"]["cc"]["net_cost_usd"]
    back = ReplayReport.from_json(data)
    old = back.sessions[0].policies["cc"]
    assert isinstance(old, PolicyResult)
    assert (old.content_kept, old.content_total, old.rereads, old.reread_usd, old.net_cost_usd) == (None,) * 5
    assert back.totals["cc"].net_cost_usd is None
    assert old.cost_usd == session.policies["cc"].cost_usd
    assert "-" in format_text(back)
