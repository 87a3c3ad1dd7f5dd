"""Paged-out records are kept compressed and come back equal; a record still open is kept as the
same object, so a result that arrives after paging out reaches it."""
from __future__ import annotations

import pickle

from app.tui.widgets.conversation.answer_record import AssistantRecord
from app.tui.widgets.conversation.archive import Archive
from app.tui.widgets.conversation.tool_block import ToolRecord


def records(n: int) -> list:
    out: list = []
    for i in range(n):
        out.append(AssistantRecord(f"answer {i}: " + "the loop compacted the history and kept the plan. " * 20))
        done = ToolRecord(f"t{i}", "bash", {"command": f"pytest -q tests/test_{i}.py"})
        done.set_result("collected 12 items\n" + "PASSED\n" * 40, 400, False)
        out.append(done)
    return out


def test_records_come_back_equal_in_order_and_smaller():
    recs = records(50)
    archive = Archive()
    archive.extend(recs)
    assert len(archive) == 100 and bool(archive)
    assert list(archive) == recs and archive[3] == recs[3] and archive[-4:] == recs[-4:]
    raw = sum(len(pickle.dumps(r)) for r in recs)
    assert archive.nbytes * 3 < raw, (archive.nbytes, raw)
    del archive[-10:]
    assert len(archive) == 90 and archive[-1] == recs[89]
    archive.clear()
    assert not archive and list(archive) == []


def test_an_open_record_stays_the_same_object():
    running = ToolRecord("t9", "bash", {"command": "sleep 100"})
    archive = Archive()
    archive.extend([AssistantRecord("before"), running], open_records=[running])
    running.set_result("done", 4, False)              # the conversation writes to the record
    assert archive[1] is running and archive[1].result == ("done", 4, False)
    assert archive[0] == AssistantRecord("before")


def test_every_kind_of_message_comes_back_equal():
    """The conversation pages out whatever it drew: each kind of record survives the archive."""
    from agent_core import events as ev
    from app.tui.widgets.conversation.compaction_marker import MarkerRecord
    from app.tui.widgets.conversation.error_message import ErrorRecord
    from app.tui.widgets.conversation.live_compaction import LiveCompactionRecord
    from app.tui.widgets.conversation.notice_message import NoticeRecord
    from app.tui.widgets.conversation.summary_block import SummaryRecord
    from app.tui.widgets.conversation.thinking_block import ThinkingRecord
    from app.tui.widgets.conversation.user_message import UserRecord

    live = LiveCompactionRecord(150_000, "the summary so far")
    live.end(True, 12.5)
    cancelled = ToolRecord("t2", "bash", {"command": "sleep 9"})
    cancelled.set_cancelled()
    event = ev.Compaction(layer="microcompact", trigger="auto", tokens_before=15_000, tokens_after=12_000,
                          duration_s=0.01, action="cleared", cache={"cost_usd": 0.01})
    recs = [UserRecord("a prompt"), AssistantRecord("an answer"), ThinkingRecord("hmm", expanded=True),
            SummaryRecord("a summary"), MarkerRecord.of(event), ErrorRecord("rate_limit", "slow down", True),
            NoticeRecord("a notice"), live, cancelled, *records(1)]
    archive = Archive(recs)
    back = list(archive)
    assert back == recs and [type(r) for r in back] == [type(r) for r in recs]
    assert all(b is not r for b, r in zip(back, recs))
    assert back[4].event == event and back[7].outcome == live.outcome and back[8].state == "-cancelled"
