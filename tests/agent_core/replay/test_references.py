"""References kept and user messages kept, computed on a tiny hand-made trajectory."""
from __future__ import annotations

from agent_core.logs.trajectory import Message, Request, Trajectory
from agent_core.pricing.pricer import Pricer
from agent_core.replay.policies import NoCompaction
from agent_core.replay.references import ReferenceIndex
from agent_core.replay.simulate import simulate


def msg(kind, text, key, tokens=100, role="user", refs=(), files=(), tools=()):
    return Message(role, kind, tokens, key, text, references=refs, files=files, tools=tools)


def tiny() -> Trajectory:
    p1 = msg("prompt", "please fix src/app.py", "p1")
    a1 = msg("assistant", "reading", "a1", role="assistant", refs=("src/app.py",))
    r1 = msg("tool_result", "src/app.py\ndef handle_login(): pass", "r1", tokens=900, files=("src/app.py",),
             tools=("Read",))
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
    """cc (the engine under Claude Code's preset) compacts before request 1 (3,000 window): the
    read result comes back re-attached and the user's prompt stays verbatim, as Claude Code's
    summary keeps them; the summary's own (unwritten) content holds no reference."""
    from agent_core.replay.options import PolicySpec
    from agent_core.replay.runner import make_policy
    from agent_core.replay.summary_size import SummarySize

    def cc(t):
        return make_policy(PolicySpec("cc", "cc"), t, window=3_000, ttl="5m", size=SummarySize(50, "default", 50, 50),
                           pricer=Pricer())[0]
    t = tiny()
    r = simulate(t, cc(t), window=3_000, pricer=Pricer(), refs=ReferenceIndex(t))
    assert [m for m in r.markers if m[1] == "autocompact"] == [[1, "autocompact"]]
    assert (r.references_kept, r.references_total) == (4, 5)
    assert r.user_messages_kept >= 1


def test_reference_index_counts_each_reference_once():
    t = tiny()
    idx = ReferenceIndex(t)
    ctx = [t.requests[1].added[1], t.requests[1].added[1]]
    assert idx.found(("src/app.py", "handle_login", "src/new.py"), ctx) == 2
    assert idx.found((), ctx) == 0
