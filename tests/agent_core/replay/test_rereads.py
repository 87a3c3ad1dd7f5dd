"""Re-reads are priced from the content a policy lost (issue 49): `content_kept` and `rereads` are
one computation. On generated sessions, under every policy that compacts, the test reads each
context a policy sent and the recorded session itself, and checks both directions: every re-read
replay counted is a file whose content that context did not hold and that the log referred to
again there; and every such file is a re-read (the log's own when its answer reads the file, else
one replay adds and prices)."""
from __future__ import annotations

import re

import pytest

from agent_core.logs.trajectory import Message, Request, Trajectory
from agent_core.pricing.pricer import Pricer
from agent_core.replay.content import ContentIndex
from agent_core.replay.options import PolicySpec
from agent_core.replay.policies import NoCompaction
from agent_core.replay.references import ReferenceIndex
from agent_core.replay.runner import make_policy
from agent_core.replay.simulate import Step, simulate
from agent_core.replay.summary_size import SummarySize
from tests.agent_core.replay.replay_helpers import Recorded
from agent_core.replay.synthetic import generate

_ATTACHED = re.compile(r'<file path="([^"]*)">')


def policy(name: str, traj: Trajectory, window: int) -> Recorded:
    return Recorded(make_policy(PolicySpec(name, name), traj, window=window, ttl="5m",
                            size=SummarySize(1_500, "default", 1_500, 1_500), pricer=Pricer())[0])


# ----- the oracle: what the test reads itself, without ContentIndex ---------------------------------
def read_results(traj: Trajectory) -> dict[str, str]:
    """Recorded read results (the generator's `read_file` results): message key -> path."""
    return {m.key: m.files[0] for r in traj.requests for m in r.added
            if m.kind == "tool_result" and m.tools == ("read_file",) and m.files}


def carried(context: list[Message], recorded: dict[str, str]) -> set[str]:
    """The files whose content `context` holds: a recorded read result, a re-read replay added (its
    call's result), a file re-attached after a compaction."""
    held = set()
    for m in context:
        if m.key in recorded:
            held.add(recorded[m.key])
        elif m.kind == "tool_result" and m.key.startswith("reread\x00") and m.files:
            held.add(m.files[0])
        elif m.kind == "attachment":
            held.update(_ATTACHED.findall(m.text))
    return held


def expected_rereads(traj: Trajectory, sent: list[list[Message]]) -> set[tuple[int, str, bool]]:
    """(request, path, added by replay) for every file the log refers to at a request — its prompt
    or its answer names the path — that it had read before and whose content the context sent
    there did not hold; "added" unless the answer itself reads the file."""
    recorded = read_results(traj)
    read: set[str] = set()
    out = set()
    for i, (req, context) in enumerate(zip(traj.requests, sent)):
        read |= {recorded[m.key] for m in req.added if m.key in recorded}
        said = "\n".join([*(m.text for m in req.added if m.kind == "prompt"), req.response.text])
        reads_itself = {b["input"].get("path") for b in req.response.blocks or ()
                        if b.get("type") == "tool_use" and b.get("name") == "read_file"}
        held = carried(context, recorded)
        out |= {(i, p, p not in reads_itself) for p in read if p in said and p not in held}
    return out


CASES = [("cc", 1, 30_000), ("cc", 5, 20_000), ("summary", 2, 30_000), ("ctxtui", 3, 30_000),
         ("ctxtui", 6, 20_000), ("server", 4, 30_000)]


@pytest.fixture(scope="module")
def runs():
    out = {}
    for name, seed, window in CASES:
        traj = generate(160, seed=seed, overhead=3_000, files=25)
        p = policy(name, traj, window)
        out[(name, seed, window)] = (traj, p, simulate(traj, p, window=window, pricer=Pricer(),
                                                        refs=ReferenceIndex(traj)))
    return out


@pytest.mark.parametrize("case", CASES, ids=[f"{n}-seed{s}-{w // 1000}k" for n, s, w in CASES])
def test_every_reread_is_content_the_policy_lost_and_the_log_referred_to(runs, case):
    traj, p, r = runs[case]
    expected = expected_rereads(traj, p.sent)
    assert set(r.reread_events) <= expected
    assert len(r.reread_events) == len(set(r.reread_events)) == r.rereads


@pytest.mark.parametrize("case", CASES, ids=[f"{n}-seed{s}-{w // 1000}k" for n, s, w in CASES])
def test_content_lost_and_referred_to_later_always_yields_a_reread(runs, case):
    traj, p, r = runs[case]
    expected = expected_rereads(traj, p.sent)
    assert set(r.reread_events) >= expected
    assert r.content_total - r.content_kept == r.rereads == len(expected)
    assert r.rereads_logged == sum(1 for *_, added in expected if not added)
    assert (r.reread_usd > 0) == any(added for *_, added in expected)


def test_the_invariant_is_tested_on_both_kinds_of_reread(runs):
    """The cases hold re-reads replay adds and re-reads the log made, under compacting policies."""
    events = [e for _, _, r in runs.values() for e in r.reread_events]
    assert sum(1 for *_, added in events if added) >= 20
    assert sum(1 for *_, added in events if not added) >= 5
    assert all(r.compactions for _, _, r in runs.values())


def test_none_never_rereads_on_the_same_sessions(runs):
    for traj, _, _ in runs.values():
        r = simulate(traj, NoCompaction("5m"), window=10**9, pricer=Pricer(), refs=ReferenceIndex(traj))
        assert r.content_kept == r.content_total > 0 and r.rereads == 0 and r.reread_usd == 0


# ----- names, and a re-read staying in the context --------------------------------------------------
def _msg(role, kind, key, text, tokens=100, blocks=None, **kw) -> Message:
    return Message(role, kind, tokens, key, text, blocks=blocks if blocks is not None else
                   [{"type": "text", "text": text}], **kw)


def recall_session() -> Trajectory:
    """Claude Code reads /ws/notes/a.txt (absolute, its `Read`), then two prompts ask about
    `notes/a.txt` and `a.txt` by name and the answers come from the context (no tool call)."""
    call = {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/ws/notes/a.txt"}}
    a0 = _msg("assistant", "assistant", "a0", "Reading notes/a.txt.", 30,
              [{"type": "text", "text": "Reading notes/a.txt."}, call], tools=("Read",), files=("/ws/notes/a.txt",),
              references=("/ws/notes/a.txt",))
    body = "FACT: the code of a is K7Q2-19\n" + "a note\n" * 50
    r0 = _msg("user", "tool_result", "r0", body, 2_000, [{"type": "tool_result", "tool_use_id": "t1",
                                                         "content": body}], tools=("Read",))
    a1 = _msg("assistant", "assistant", "a1", "It holds notes.", 10)
    p1 = _msg("user", "prompt", "p1", "What is the fact of notes/a.txt? Answer with its code.", 20)
    a2 = _msg("assistant", "assistant", "a2", "As read earlier: K7Q2-19.", 10)
    p2 = _msg("user", "prompt", "p2", "And once more, the code in a.txt?", 20)
    a3 = _msg("assistant", "assistant", "a3", "K7Q2-19.", 10)
    t = Trajectory("recall.jsonl", "s", "claude-sonnet-4-5", overhead_tokens=2_000)
    p0 = _msg("user", "prompt", "p0", "Read notes/a.txt", 10)
    t.requests = [Request(0, 1000.0, t.model, [p0], a0, {"output": 30}),
                  Request(1, 1001.0, t.model, [a0, r0], a1, {"output": 10}),
                  Request(2, 1010.0, t.model, [a1, p1], a2, {"output": 10}),
                  Request(3, 1020.0, t.model, [a2, p2], a3, {"output": 10})]
    return t


class DropReads(NoCompaction):
    """`none`, with every recorded read result left out of what it sends (a stand-in for a policy
    that cleared them); what replay adds back stays."""

    def step(self, request: Request) -> Step:
        step = super().step(request)
        return Step([m for m in step.context if m.key != "r0"])


def test_a_prompt_naming_a_file_read_earlier_is_a_use():
    uses = ContentIndex(recall_session()).uses
    assert [[(u.path, u.charged) for u in us] for us in uses] == [[], [], [("/ws/notes/a.txt", True)],
                                                                 [("/ws/notes/a.txt", True)]]
    assert uses[2][0].tokens == 2_000 and uses[2][0].text.startswith("FACT:") and uses[2][0].tool == "Read"


def test_a_reread_file_stays_in_the_context_until_the_policy_drops_it():
    """The first recall finds the file gone: one re-read, priced; its call and result join the
    context, so the second recall keeps the content and the later requests carry the file."""
    t = recall_session()
    p = Recorded(DropReads("5m"))
    r = simulate(t, p, window=200_000, pricer=Pricer(), refs=ReferenceIndex(t))
    assert r.reread_events == [(2, "/ws/notes/a.txt", True)]
    assert (r.content_kept, r.content_total, r.rereads, r.rereads_logged) == (1, 2, 1, 0)
    assert r.reread_usd > 0
    keys = [m.key for m in p.sent[3]]
    assert keys.index("reread\x002\x00/ws/notes/a.txt\x00call") < keys.index("a2")    # before the answer
    assert r.context[3] - r.context[2] == 100 + 2_000 + 10 + 20                     # call, file, a2, p2
    call = next(m for m in p.sent[3] if m.key.endswith("\x00call"))
    assert call.blocks[0]["name"] == "Read" and call.blocks[0]["input"] == {"file_path": "/ws/notes/a.txt"}


def many_reads(n: int = 7) -> Trajectory:
    """Claude Code reads /ws/f0.txt … f{n-1}.txt (900 tokens each), then a prompt asks about
    `f0.txt` by name and the answer comes from the context, then one more prompt."""
    t = Trajectory("reads.jsonl", "s", "claude-sonnet-4-5", overhead_tokens=2_000)
    added: list[Message] = [_msg("user", "prompt", "p0", "Read the files", 10)]
    ts = 1000.0
    for i in range(n):
        path = f"/ws/f{i}.txt"
        call = {"type": "tool_use", "id": f"t{i}", "name": "Read", "input": {"file_path": path}}
        a = _msg("assistant", "assistant", f"a{i}", f"Reading f{i}.txt.", 30,
                 [{"type": "text", "text": f"Reading f{i}.txt."}, call], tools=("Read",), files=(path,),
                 references=(path,))
        t.requests.append(Request(len(t.requests), ts, t.model, added, a, {"output": 30}))
        body = f"FACT: the code of f{i} is X{i}\n" + f"a line of f{i}\n" * 40
        added = [a, _msg("user", "tool_result", f"r{i}", body, 900,
                         [{"type": "tool_result", "tool_use_id": f"t{i}", "content": body}], tools=("Read",))]
        ts += 10
    done = _msg("assistant", "assistant", "done", "Read them all.", 10)
    t.requests.append(Request(len(t.requests), ts, t.model, added, done, {"output": 10}))
    ask = _msg("user", "prompt", "ask", "What is the fact of f0.txt?", 20)
    answer = _msg("assistant", "assistant", "answer", "X0.", 10)
    t.requests.append(Request(len(t.requests), ts + 10, t.model, [done, ask], answer, {"output": 10}))
    more = _msg("user", "prompt", "more", "Thanks, that is all.", 20)
    t.requests.append(Request(len(t.requests), ts + 20, t.model, [answer, more],
                              _msg("assistant", "assistant", "bye", "Bye.", 5), {"output": 5}))
    return t


def test_a_reread_under_the_engine_joins_its_history():
    """cc at 10,000 compacts and re-attaches the five newest files: f0's content is gone when the
    prompt asks about it, so replay re-reads it; the engine's history then holds the call and its
    result as a valid tool pair, ahead of the answer, and the last request still carries the file."""
    from compaction import project, validate_history

    t = many_reads()
    p = policy("cc", t, 10_000)
    r = simulate(t, p, window=10_000, pricer=Pricer(), refs=ReferenceIndex(t))
    ask = len(t.requests) - 2
    assert r.compactions.get("autocompact", 0) == 1 and r.summary_calls == 1
    assert r.reread_events == [(ask, "/ws/f0.txt", True)]
    history = p.inner.history
    assert validate_history(project(p.inner.view)) == []
    names = [b.get("name") for e in history for b in e.content if b.get("type") == "tool_use"]
    assert names[-1] == "read_file"                    # Claude Code's Read, as the engine names it
    assert "/ws/f0.txt" in carried(p.sent[-1], {})


@pytest.mark.parametrize("name", ["cc", "summary", "ctxtui", "server"])
def test_every_summarising_policy_pays_its_summary_calls(name):
    """Each summary call a policy makes is priced (in cost_usd and compaction_cost_usd) and counted:
    one per LLM compaction. ctxtui mostly compacts with its session notes (no model call), so it
    is replayed at a few small windows until its LLM summary runs."""
    traj = generate(160, seed=3, overhead=3_000)
    layer = "server_compact" if name == "server" else "autocompact"
    paid = 0
    for window in ((25_000,) if name != "ctxtui" else (10_000, 8_000, 12_000, 6_000)):
        r = simulate(traj, policy(name, traj, window), window=window, pricer=Pricer(), refs=ReferenceIndex(traj))
        assert r.summary_calls >= r.compactions.get(layer, 0)
        assert (r.compaction_cost_usd > 0) == (r.summary_calls > 0)
        assert r.compaction_cost_usd < r.cost_usd
        paid += r.summary_calls
        if paid:
            break
    assert paid >= 1


def test_a_reactive_policy_is_refused_over_the_window_then_compacts_and_sends_again():
    """cc-reactive (Claude Code's headless default) has no summary at the threshold: a request over
    the window is refused (not billed), the reactive compaction runs and the retry fits."""
    traj = generate(160, seed=3, overhead=3_000)
    p = policy("cc-reactive", traj, 60_000)
    r = simulate(traj, p, window=60_000, pricer=Pricer(), refs=ReferenceIndex(traj))
    assert r.refusals >= 1 and r.overflows == 0
    assert r.summary_calls >= r.refusals and r.compactions.get("autocompact", 0) >= r.refusals
    assert max(r.context) <= 60_000 < max(r.context[i - 1] + sum(m.tokens for m in traj.requests[i].added)
                                          for i, _ in r.markers)
    proactive = simulate(traj, policy("cc", traj, 60_000), window=60_000, pricer=Pricer(), refs=ReferenceIndex(traj))
    assert proactive.refusals == 0 and proactive.summary_calls >= 1


def test_any_preset_can_be_named_as_a_policy(tmp_path):
    from agent_core.replay.options import ReplayUsageError, make_options, parse_policy

    assert parse_policy("cc-reactive") == PolicySpec("cc-reactive", "cc-reactive")
    options = make_options([str(tmp_path)], ["cc-reactive"])
    assert [p.name for p in options.policies] == ["none", "cc", "summary", "ctxtui", "cc-reactive"]
    with pytest.raises(ReplayUsageError):
        parse_policy("cc-reactive:CTXTUI_CACHE_TTL=1h")         # a variant needs its own name
