"""What the transcript viewer asks of a record, without Textual: the kind filter, the search and
the detail pane's text (agent_core.logs.transcript_files)."""
from __future__ import annotations

from agent_core.logs.transcript_files import DETAIL_CHARS, FILTERS, KINDS, Record, next_filter


def record(kind: str = "user", text: str = "Hello World", boundary: bool = False) -> Record:
    return Record(1, kind, "", "", text[:20], text, boundary)


def test_the_kind_filter_keeps_its_kind_and_compaction_keeps_every_boundary():
    assert record("tool").passes("all") and record("tool").passes("tool")
    assert not record("tool").passes("user")
    assert record("other", boundary=True).passes("compaction")
    assert not record("other").passes("compaction")


def test_the_filter_cycles_through_every_kind_then_all():
    seen = ["all"]
    while (f := next_filter(seen[-1])) != "all":
        seen.append(f)
    assert tuple(seen) == FILTERS == ("all",) + KINDS


def test_search_ignores_case():
    assert record(text="Hello World").matches("world")
    assert not record(text="Hello").matches("world")


def test_the_detail_is_cut_and_says_how_much_more():
    assert record(text="short").detail() == "short"
    long = "x" * (DETAIL_CHARS + 1234)
    assert record(text=long).detail() == "x" * DETAIL_CHARS + "\n… 1,234 more characters"
