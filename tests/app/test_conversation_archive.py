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
