"""Claude Code 2.1.328 logs as replay reads them: a compaction keeps the turn in progress verbatim
after the summary (`compactMetadata.preservedSegment`), what it re-attached is the log's own
context, and the summary is sized from its own text.

Fixtures (real logs of the pinned binary against the project's fake API, trimmed; tool results cut
to a few lines, paths moved to /home/user): `claude_code_2_1_328.jsonl`, a manual `/compact`
between two prompts (see test_cost_state.py), and `claude_code_2_1_328_auto_compact.jsonl`, the
closed loop of tests/closed_loop_peer.py at a 100,000 window (CLAUDE_CODE_AUTO_COMPACT_WINDOW) up
to the first request after its first auto-compaction, which came in the middle of a turn: after
the `Read` call of file_010.txt and its result, before the answer. Of the attachment records it
keeps those after the compaction (their `rendered` text cut to six lines): the notes on five files
too large to re-attach and the reminders Claude Code sends again.
"""
from __future__ import annotations

from pathlib import Path

from compaction.estimate import estimate_message

from agent_core.logs.trajectory_read import read_trajectories
from agent_core.replay.content import ContentIndex
from agent_core.replay.policies import new_messages
from agent_core.replay.summary_size import summary_size

DATA = Path(__file__).parent / "data"
MANUAL = DATA / "claude_code_2_1_328.jsonl"
AUTO = DATA / "claude_code_2_1_328_auto_compact.jsonl"


def test_no_recorded_answer_is_lost_to_a_compaction():
    """Every answer but the last is the first message the next request adds: across the manual and
    the automatic compaction too (before, the answer and the results of the turn a compaction
    kept were dropped, and no policy ever saw them)."""
    for path in (MANUAL, AUTO):
        (t,) = read_trajectories(path)
        for before, after in zip(t.requests, t.requests[1:]):
            assert after.added and after.added[0] is before.response, (path.name, after.index)


def test_an_auto_compaction_in_the_middle_of_a_turn_keeps_the_read_it_preserved():
    (t,) = read_trajectories(AUTO)
    last = t.requests[-1]
    c = last.compaction_before
    assert c is not None and c.trigger == "auto" and c.preserved and c.tokens_before == 70_509
    assert [m.kind for m in last.added] == ["assistant", "tool_result"]
    assert last.added[0].tools == ("Read",) and last.added[1].files == ("/home/user/ws/file_010.txt",)
    index = ContentIndex(t)
    assert index.paths(last.added[1]) == ("/home/user/ws/file_010.txt",)       # a read the policies see
    # what Claude Code sent after the summary is the log's own context, not the policies'
    after = last.context_after_compaction
    assert [m.kind for m in after].count("summary") == 1 and {m.kind for m in after} == {"summary", "attachment"}
    notes = [m for m in after if "was read before the last conversation was summarized" in m.text]
    assert len(notes) == 5                       # files too large to re-attach, each left out with a note
    assert new_messages(last) == last.added
    context = next(c for i, c in enumerate(t.contexts()) if i == last.index)
    assert context == [*after, *last.added]      # as Claude Code sent it: the summary, its notes, the kept turn


def test_the_summary_is_sized_from_its_own_text():
    """The request after a compaction also carries what Claude Code re-attached and its reminders;
    the summary's size is its own text's estimate, whatever calibration gave its message."""
    (t,) = read_trajectories(AUTO)
    (summary,) = [m for m in t.requests[-1].context_after_compaction if m.kind == "summary"]
    size = summary_size(t, 100_000)
    assert size.source == "log" and size.tokens == estimate_message({"content": summary.blocks})


def test_without_its_rendered_text_an_attachment_is_left_out(tmp_path):
    """Older logs' attachment records carry no `rendered` text: left out, as before."""
    import json

    records = [json.loads(line) for line in AUTO.read_text().splitlines()]
    for r in records:
        r.pop("rendered", None)
    path = tmp_path / "old.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    (t,) = read_trajectories(path)
    assert [m.kind for m in t.requests[-1].context_after_compaction] == ["summary"]
