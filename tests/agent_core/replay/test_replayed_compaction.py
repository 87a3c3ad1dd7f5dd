"""A replayed compaction costs what the live one did (issue 49, part 4: ctxtui run with --policy cc
and its own log replayed under `cc` came out 1.15-1.19x of live at 100k and 60k):

- the summary is sized from the log's own summary calls when its compaction records carry no size
  (a ctxtui log), not from the 4,000-token default;
- the summary call reads the conversation before an automatic compaction's turn in progress (the
  prefix the last request cached), not that turn too: the turn follows the summary verbatim;
- a file re-attached after the compaction is the file as the log's reads show it (every page read),
  as the live loop reads it from disk, not the last page alone.
"""
from __future__ import annotations

from agent_core.logs.trajectory import Message, Request
from agent_core.pricing.pricer import Pricer
from agent_core.replay.logged_files import LoggedFiles
from agent_core.replay.options import PolicySpec
from agent_core.replay.runner import make_policy
from agent_core.replay.summary_size import SummarySize, summary_size
from agent_core.replay.synthetic import generate


def _side(i: int, purpose: str, output: int) -> Request:
    empty = Message("assistant", "assistant", 0, f"side{i}")
    return Request(i, 1000.0 + i, "claude-sonnet-4-6", [], empty, {"output": output}, purpose=purpose)


def test_a_ctxtui_log_sizes_the_summary_from_its_own_summary_calls():
    traj = generate(20, seed=1, overhead=2_000)
    assert summary_size(traj, 100_000).source == "default"
    traj.compaction_calls = [_side(0, "compaction", 600), _side(1, "memory", 9_000), _side(2, "compaction", 1_400),
                             _side(3, "compaction", 2_900)]
    size = summary_size(traj, 100_000)
    assert (size.tokens, size.source, size.low, size.high) == (1_400, "log", 600, 2_900)   # session notes left out
    assert summary_size(traj, 4_000).tokens == 1_000                                      # still capped by the window


def _result(tid: str, text: str) -> Message:
    return Message("user", "tool_result", len(text) // 4, f"r-{tid}", text,
                   blocks=[{"type": "tool_result", "tool_use_id": tid, "content": text}])


def _read(tid: str, name: str, **inp) -> Message:
    return Message("assistant", "assistant", 20, f"a-{tid}", blocks=[{"type": "tool_use", "id": tid, "name": name,
                                                                      "input": inp}])


def test_logged_files_joins_the_pages_read():
    files = LoggedFiles()
    first = "1\tone\n2\ttwo\n[showing lines 1-2 of 3 (output size limit): read on with offset=3]"
    files.add([_read("t1", "read_file", path="a.txt"), _result("t1", first)])
    assert files.read("a.txt") == "one\ntwo"                    # the tool's note is not the file's
    files.add([_read("t2", "read_file", path="./a.txt", offset=3), _result("t2", "3\tthree")])
    assert files.read("a.txt") == "one\ntwo\nthree"             # every page read, in line order
    files.add([_read("t3", "Read", file_path="/ws/b.py"), _result("t3", "     1→import os\n     2→x = 1")])
    assert files.read("/ws/b.py") == "import os\nx = 1"         # Claude Code's numbering
    files.add([_read("t4", "read_file", path="c.txt"), _result("t4", "no numbers here")])
    assert files.read("c.txt") == "no numbers here"
    files.add([_read("t5", "bash", command="cat d.txt"), _result("t5", "1\tnot a read")])
    assert files.read("d.txt") is None and files.read("nowhere") is None


def test_the_replayed_engine_reads_files_as_logged():
    traj = generate(20, seed=1, overhead=2_000)
    policy = make_policy(PolicySpec("cc", "cc"), traj, window=30_000, ttl="5m",
                         size=SummarySize(1_500, "default", 1_500, 1_500), pricer=Pricer())[0]
    assert all(getattr(s, "read_file", None) == policy.files.read
               for s in (getattr(x, "inner", x) for x in policy.stages) if hasattr(s, "read_file"))


def test_a_summary_call_leaves_out_the_turn_kept_after_it():
    """cc on a generated session: each summary call reads what the stage summarised — an automatic
    compaction in the middle of a turn keeps that turn verbatim after the summary, so none of the
    turn's answers and results is in the call (the user's words are: the summary keeps them too)."""
    traj = generate(200, seed=2, overhead=3_000)
    policy = make_policy(PolicySpec("cc", "cc"), traj, window=30_000, ttl="5m",
                         size=SummarySize(1_500, "default", 1_500, 1_500), pricer=Pricer())[0]
    previous: list[Message] = []
    calls = 0
    kept_turns = 0
    for req in traj.requests:
        step = policy.step(req)
        for call in step.calls:
            calls += 1
            turn = {m.key for m in step.context if m.kind in ("assistant", "tool_result")}
            assert not turn & {m.key for m in call.context}
            kept_turns += bool(turn)
            keys = [m.key for m in call.context]
            # the conversation before the turn: a prefix of what the previous request sent
            before = [m.key for m in previous]
            assert keys == before[:len(keys)] or before == keys[:len(before)]
        previous = list(step.context)
    assert calls >= 5 and kept_turns >= 3
