"""What a compaction lost (compaction/loss_report.py), on hand-made histories: the user's prompts
kept verbatim, quoted or dropped; files read whose content is gone (and the ones re-attached or
still there); tool results cleared; the names from the prompts no longer in the context, as a
recall score. And through a real compaction of the demo loop: every Compaction event of a run that
changed the history carries the report (headless JSON included)."""
from __future__ import annotations

import json

from compaction.entry import Entry, assistant, tool_result_block, user
from compaction.loss_report import loss_report, named_items, summary_line

LONG = "Please refactor the parser in src/parse_header.py so that parse_header handles ISSUE-42 cleanly"


def read(tid: str, path: str, body: str) -> list[Entry]:
    return [assistant([{"type": "tool_use", "id": tid, "name": "read_file", "input": {"path": path}}]),
            user([tool_result_block(tid, body)])]


def history() -> list[Entry]:
    return [user(LONG), *read("t1", "src/parse_header.py", "def parse_header(x):\n    return x\n" * 50),
            *read("t2", "docs/notes.md", "notes " * 300),
            assistant([{"type": "tool_use", "id": "t3", "name": "bash", "input": {"command": "pytest -q"}}]),
            user([tool_result_block("t3", "3 failed, 120 passed in 4.2s " * 20)]),
            user("Also keep the timeout at 1500 ms\nand do not touch the fixtures in tests/data/"),
            user("thanks")]


def test_nothing_lost_when_nothing_changed():
    h = history()
    loss = loss_report(h, h)
    assert loss["prompts"] == {"verbatim": 3, "quoted": 0, "dropped": 0, "total": 3, "dropped_list": []}
    assert loss["files_gone"] == [] and loss["results_cleared"] == 0 and loss["recall"] == 1.0


def test_a_summary_that_drops_things_says_what():
    h = history()
    summary = user("Summary: the user wants parse_header in src/parse_header.py refactored. "
                   "Also keep the timeout at 1500 ms", isCompactSummary=True)
    after = [summary, h[-1]]
    loss = loss_report(h, after)
    p = loss["prompts"]
    assert (p["verbatim"], p["quoted"], p["dropped"]) == (1, 1, 1)     # "thanks"; the timeout line; the first
    assert p["dropped_list"] == [" ".join(LONG.split())[:80]]
    assert [f[0] for f in loss["files_gone"]] == ["src/parse_header.py", "docs/notes.md"]
    assert loss["files_gone_chars"] == len("def parse_header(x):\n    return x\n" * 50) + len("notes " * 300)
    assert loss["results_cleared"] == 1                       # the pytest output (reads are counted as files)
    assert "ISSUE-42" in loss["missing"] and "tests/data" in loss["missing"]
    assert "parse_header" not in loss["missing"] and "1500" not in loss["missing"]
    assert 0 < loss["recall"] < 1
    line = summary_line(loss)
    assert line.startswith("prompts 1 kept, 1 quoted, 1 dropped · 2 files gone (") and "1 result cleared" in line
    assert "recall " in line and "names lost" in line
    json.dumps(loss)                                           # plain JSON: the session log keeps it


def test_a_re_attached_or_still_present_file_is_not_gone():
    h = history()
    attached = Entry({"role": "user", "content": [{"type": "text", "text": "def parse_header(x): ..."}]},
                     kind="attachment", meta={"path": "src/parse_header.py"})
    cleared_notes = read("t2", "docs/notes.md", "[cleared]")
    loss = loss_report(h, [attached, *h[3:5], *h[5:]])
    assert [f[0] for f in loss["files_gone"]] == []
    loss = loss_report(h, [attached, *cleared_notes, *h[5:]])
    assert [f[0] for f in loss["files_gone"]] == ["docs/notes.md"]      # a stub is not the content


def test_names_are_paths_identifiers_and_numbers():
    got = named_items(["fix src/app.py, then run test_parse_v2 with retries=3 and timeout 1500; see "
                       "README.md and camelCase and PROJ-12, not plain words or 7"])
    assert got == ["src/app.py", "test_parse_v2", "1500", "README.md", "camelCase", "PROJ-12"]
