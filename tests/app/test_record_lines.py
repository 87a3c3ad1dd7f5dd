"""The conversation's records as lines (app/tui/widgets/conversation/record_lines.py): offsets with
margins collapsed, a record drawn again, and the paging of older messages, without a screen."""
from __future__ import annotations

from dataclasses import dataclass

from rich.segment import Segment
from textual.strip import Strip

from app.tui.widgets.conversation.record_lines import EarlierRecord, RecordLines


@dataclass
class Rec:
    name: str
    height: int = 1
    margin: tuple[int, int] = (0, 0)


def draw(record) -> list[Strip]:
    if isinstance(record, EarlierRecord):
        return [Strip([Segment(f"earlier {record.count}")])]
    return [Strip([Segment(f"{record.name}{n}")]) for n in range(record.height)]


def lines(live_limit: int = 100, page: int = 10) -> RecordLines:
    return RecordLines(draw, live_limit=live_limit, page=page)


def test_margins_between_records_collapse_to_the_larger():
    d = lines()
    a, b, c = Rec("a", 2, (0, 1)), Rec("b", 1, (2, 0)), Rec("c", 3)
    assert d.append(a) == (0, 2)
    assert d.append(b) == (2, 1)         # 2 blank lines above b (its margin beats a's 1)
    assert d.append(c) == (5, 3)
    assert d.gaps == [0, 2, 0] and d.tops == [0, 2, 5] and d.height == 8
    assert d.row_of(b) == 4 and d.at(3) == 1 and d.at(7) == 2 and d.at(8) is None
    assert d.text().splitlines() == ["a0", "a1", "", "", "b0", "c0", "c1", "c2"]


def test_a_record_drawn_again_moves_those_below_only_when_its_height_changed():
    d = lines()
    a, b = Rec("a", 1), Rec("b", 2)
    d.append(a)
    d.append(b)
    assert d.redraw(0) == (0, 1, False) and d.tops == [0, 1]
    a.height = 3
    assert d.redraw(0) == (0, 5, True)
    assert d.tops == [0, 3] and d.height == 5


def test_older_messages_are_paged_out_a_page_at_a_time_behind_the_earlier_line():
    d = lines(live_limit=3, page=2)
    recs = [Rec(str(i)) for i in range(5)]
    for r in recs:
        d.append(r)
    assert not d.page_out([], [])                     # 5 <= 3 + 2: not yet
    d.append(extra := Rec("5"))
    assert d.page_out([], [])
    assert d.messages == [recs[3], recs[4], extra]
    assert isinstance(d.records[0], EarlierRecord) and d.records[0].count == 3 == len(d.archived)
    assert d.height == 4 and len(d.lines) == len(d.tops) == 4
    assert d.show_earlier() == 2                      # the last page of those paged out
    assert [r.name for r in d.messages] == ["1", "2", "3", "4", "5"] and d.records[0].count == 1
    assert d.show_earlier() == 1 and not isinstance(d.records[0], EarlierRecord)
    assert d.show_earlier() == 0 and d.height == 6


def test_a_record_still_being_written_is_never_paged_out_nor_what_follows_it():
    d = lines(live_limit=2, page=1)
    recs = [Rec(str(i)) for i in range(4)]
    for r in recs:
        d.append(r)
    assert d.page_out([recs[1]], []) and d.messages == recs[1:]
    assert not d.page_out([recs[1]], [])


def test_a_loaded_history_keeps_what_was_said_before_it_first_and_draws_the_latest():
    d = lines(live_limit=3, page=2)
    banner = Rec("banner")
    d.append(banner)
    loaded = [Rec(str(i)) for i in range(4)]
    d.load(loaded, [])
    assert d.messages == loaded[1:]
    assert [r.name for r in d.archived] == ["banner", "0"] and d.records[0].count == 2
    d.clear()
    assert not d.records and not d.archived and d.height == 0 and d.at(0) is None
