"""The conversation's records as the lines it scrolls through, and the paging of older ones.

Each drawn record keeps its lines at the view's width and where it starts: the blank lines above
it (its margin and its neighbour's, collapsed as CSS's are) and the first of them. Appending a
record adds its lines at the end; a record that changed is drawn again and those below move only
when its height changed. The latest `live_limit` messages are kept drawn; older ones are paged out,
a page at a time, into an `Archive` (compressed), behind an "earlier messages" line that brings
them back a page at a time.

No widget here: the conversation (container.py) gives the drawing (`draw`), says when paging may
happen (only while it follows the bottom) and does the scrolling and refreshing."""
from __future__ import annotations

from bisect import bisect_right
from typing import Any, Callable, Iterable

from rich.text import Text
from textual.strip import Strip

from app.tui.widgets.conversation.archive import Archive
from app.tui.widgets.conversation.draw import Look, paragraph


class EarlierRecord:
    """The top line while older messages are paged out: how many, and how to see them."""

    __slots__ = ("count", "page")

    def __init__(self, count: int, page: int) -> None:
        self.count, self.page = count, page

    def draw(self, look: Look, width: int) -> list[Strip]:
        text = Text(f"▲ {self.count:,} earlier messages — click or press Enter to show "
                    f"{min(self.count, self.page):,} more (the session log keeps everything: /transcripts)")
        return paragraph(look, text, width, style=look.style("notice"))


def _margin(record: Any) -> tuple[int, int]:
    margin: tuple[int, int] = getattr(record, "margin", (0, 0))   # a record kind without one has none
    return margin


class RecordLines:
    """`records` drawn (oldest first, an EarlierRecord first while some are paged out), `lines`
    each one's strips, `tops` the first line of each (its margin's), `gaps` the blank lines above
    each, `height` the lines in all; `archived` the paged-out records, oldest first."""

    def __init__(self, draw: Callable[[Any], list[Strip]], *, live_limit: int, page: int) -> None:
        self._draw = draw
        self.live_limit = live_limit
        self.page = page
        self.archived = Archive()
        self.records: list[Any] = []
        self.lines: list[list[Strip]] = []
        self.tops: list[int] = []
        self.gaps: list[int] = []
        self.height = 0

    # ----- reading --------------------------------------------------------------------------------
    @property
    def messages(self) -> list[Any]:
        """The records drawn, oldest first (without the earlier-messages line)."""
        return [r for r in self.records if not isinstance(r, EarlierRecord)]

    def index(self, record: Any) -> int | None:
        """Where a record is drawn (looked for from the end: the records that change are recent)."""
        for i in range(len(self.records) - 1, -1, -1):
            if self.records[i] is record:
                return i
        return None

    def at(self, line: int) -> int | None:
        """The index of the record drawn at `line` (its margin included); None past the end."""
        if not self.records or not 0 <= line < self.height:
            return None
        return bisect_right(self.tops, line) - 1

    def row_of(self, record: Any) -> int | None:
        """The line a drawn record's own lines begin at (below its margin)."""
        i = self.index(record)
        return None if i is None else self.tops[i] + self.gaps[i]

    def text(self) -> str:
        """Every drawn line as plain text, the blank lines between records included."""
        rows: list[str] = []
        for gap, lines in zip(self.gaps, self.lines):
            rows += [""] * gap
            rows += [s.text.rstrip() for s in lines]
        return "\n".join(rows)

    # ----- drawing --------------------------------------------------------------------------------
    def append(self, record: Any) -> tuple[int, int]:
        """Draw a record at the end. Returns the lines to refresh (first, count)."""
        self.records.append(record)
        lines = self._draw(record)
        self.lines.append(lines)
        gap = self._gap(len(self.records) - 1)
        self.tops.append(self.height)
        self.gaps.append(gap)
        self.height += gap + len(lines)
        return self.tops[-1], len(lines) or 1

    def redraw(self, i: int) -> tuple[int, int, bool]:
        """Draw record `i` again. Returns the lines to refresh (first, count) and whether its
        height changed (then the records below moved, and the height with them)."""
        old = len(self.lines[i])
        self.lines[i] = self._draw(self.records[i])
        if len(self.lines[i]) != old:
            self.layout(i + 1)
            return self.tops[i], max(1, self.height - self.tops[i]), True
        return self.tops[i], max(1, old), False

    def redraw_all(self) -> None:
        """Every record drawn again (a new width or new colours)."""
        self.lines = [self._draw(r) for r in self.records]
        self.layout(0)

    def layout(self, start: int = 0) -> None:
        """The offsets of the records from `start` on (after a record changed height)."""
        del self.tops[start:]
        del self.gaps[start:]
        top = self.tops[-1] + self.gaps[-1] + len(self.lines[start - 1]) if start else 0
        for i in range(start, len(self.records)):
            gap = self._gap(i)
            self.tops.append(top)
            self.gaps.append(gap)
            top += gap + len(self.lines[i])
        self.height = top

    def _gap(self, i: int) -> int:
        """The blank lines between record `i` and the one above: the larger of their margins."""
        top = _margin(self.records[i])[0]
        return max(top, _margin(self.records[i - 1])[1]) if i else top

    def clear(self) -> None:
        self.archived.clear()
        self.records.clear()
        self.lines.clear()
        self.tops.clear()
        self.gaps.clear()
        self.height = 0

    # ----- paging ---------------------------------------------------------------------------------
    def page_out(self, writing: Iterable[Any], open_records: Iterable[Any]) -> bool:
        """Page out the oldest messages, a page at a time, when more than `live_limit` + a page are
        drawn; never one still being written to (`writing`) or a message after it. Records in
        `open_records` (calls without a result yet) are archived as they are. Returns whether any
        was paged out (the indices moved)."""
        live = self.messages
        if len(live) <= self.live_limit + self.page:
            return False
        cut = len(live) - self.live_limit
        busy = {id(r) for r in writing}
        for n, r in enumerate(live[:cut]):
            if id(r) in busy:
                cut = n
                break
        if not cut:
            return False
        self.archived.extend(live[:cut], open_records=open_records)
        start = self._first_message()
        del self.records[start:start + cut]
        del self.lines[start:start + cut]
        self._earlier_line()
        return True

    def show_earlier(self) -> int:
        """Draw the last page of paged-out messages above the others. Returns how many."""
        if not self.archived:
            return 0
        batch = self.archived[-self.page:]
        del self.archived[-self.page:]
        start = self._first_message()
        self.records[start:start] = batch
        self.lines[start:start] = [self._draw(r) for r in batch]
        self._earlier_line()
        return len(batch)

    def load(self, records: list[Any], open_records: Iterable[Any]) -> None:
        """These messages after those drawn (a resumed history): the latest `live_limit` drawn,
        the rest paged out."""
        records = self.messages + records     # what was said before (a banner) stays first
        cut = max(0, len(records) - self.live_limit)
        self.archived.extend(records[:cut], open_records=open_records)
        self.records = records[cut:]
        self.lines = [self._draw(r) for r in self.records]
        self._earlier_line()

    def _first_message(self) -> int:
        return 1 if self.records and isinstance(self.records[0], EarlierRecord) else 0

    def _earlier_line(self) -> None:
        """The earlier-messages line at the top while any are paged out, with their count; then
        every offset again."""
        has_line = self._first_message() == 1
        if self.archived:
            if has_line:
                self.records[0].count = len(self.archived)
                self.lines[0] = self._draw(self.records[0])
            else:
                line = EarlierRecord(len(self.archived), self.page)
                self.records.insert(0, line)
                self.lines.insert(0, self._draw(line))
        elif has_line:
            del self.records[0]
            del self.lines[0]
        self.layout(0)
