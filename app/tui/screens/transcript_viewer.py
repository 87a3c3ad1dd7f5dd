"""The transcript viewer: one log (a ctxtui session, a compaction transcript or a Claude Code log),
read-only, with search, a filter by kind and jumps between compaction boundaries. Big files load
in a thread worker in batches, so the screen keeps answering keys while a 50 MB log is read.

File names, folder names and every field of a log are someone else's bytes: they are shown through
`agent_core.security.visible_text` (control characters visible, never obeyed) and as Text or
Content, never as markup (a DataTable parses a plain str cell as Rich markup)."""
from __future__ import annotations

import bisect
import threading
from pathlib import Path

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Footer, Input, Static
from textual.worker import get_current_worker

from agent_core.security.visible_text import one_line, visible

from agent_core.logs.transcript_files import Record, load, next_filter

from app import format as fmt
from app.tui.widgets.record_list import RecordList


class TranscriptViewer(Screen[None]):
    """One log, read-only. `/` opens the search box (what is typed goes into it: `]`, `[`, `f`
    too); Enter searches and gives the keys back to the list, where `n` / `N` find the next /
    previous match, `f` cycles the kind filter and `]` / `[` jump to the next / previous compaction
    boundary. Esc in the search box leaves the search (the list gets the keys); Esc on the list
    closes the viewer. The list takes the height the status line, the search box (shown only
    while searching or a search is set) and the record's detail (as tall as it is, up to 10 rows)
    leave."""

    BINDINGS = [
        Binding("escape,q", "close", "Close", id="viewer.close"),
        Binding("slash", "search", "Search", id="viewer.search"),
        Binding("n", "find(1)", "Next match", id="viewer.next"),
        Binding("N", "find(-1)", "Prev match", id="viewer.prev"),
        Binding("f", "cycle_filter", "Filter", id="viewer.filter"),
        Binding("right_square_bracket", "boundary(1)", "Next compaction", id="viewer.next_boundary"),
        Binding("left_square_bracket", "boundary(-1)", "Prev compaction", id="viewer.prev_boundary"),
    ]

    AUTO_FOCUS = "RecordList"    # the list has the keys; the search box only after `/` (or a click)
    kind_filter: reactive[str] = reactive("all")

    def __init__(self, path: Path, *, gate: threading.Event | None = None) -> None:
        super().__init__()
        self.path = path
        self.records: list[Record] = []
        self.loaded_bytes = 0
        self.total_bytes = 0
        self.done = False
        self.gate = gate
        self.query_text = ""
        self.rows: list[int] = []       # indices of records that pass the filter
        self.boundaries = 0
        self._matches: tuple[tuple, list[int]] = ((), [])   # (query, filter, rows), positions in `rows`
        self.searching = False          # the search box has the keys (set at once, before its focus lands)

    def compose(self) -> ComposeResult:
        with Vertical(id="viewer"):
            yield Static(id="viewer-status")
            yield Input(placeholder="search (Enter: next match, Esc: back to the list)", id="viewer-search")
            yield RecordList(id="viewer-list")
            yield Static(id="viewer-detail", classes="-empty")
        yield Footer()

    def on_mount(self) -> None:
        # A border title given as str is markup: the file's name goes in as Content.
        self.query_one("#viewer").border_title = Content(f"{one_line(self.path.name)} (read-only)")
        try:
            self.total_bytes = self.path.stat().st_size
        except OSError:
            self.total_bytes = 0
        self._status()
        self.query_one(RecordList).focus()
        self.load_file()

    @work(thread=True, exclusive=True, group="load")
    def load_file(self) -> None:
        worker = get_current_worker()
        try:
            load(self.path, lambda batch, done: self.app.call_from_thread(self._add_batch, batch, done),
                 cancelled=lambda: worker.is_cancelled, gate=self.gate)
        except OSError as e:
            self.app.call_from_thread(self._failed, f"cannot read {self.path}: {e.strerror or e}")
            return
        if not worker.is_cancelled:
            self.app.call_from_thread(self._finished)

    def _add_batch(self, batch: list[Record], done: int) -> None:
        """Append a batch; only the new records are filtered, so a load costs O(records)."""
        start = len(self.records)
        self.records.extend(batch)
        self.boundaries += sum(1 for r in batch if r.boundary)
        self.loaded_bytes = done
        self.rows.extend(i for i in range(start, len(self.records)) if self._keep(self.records[i]))
        self.query_one(RecordList).set_rows(self.records, self.rows)
        self._status()

    def _finished(self) -> None:
        self.done = True
        self._status()

    def _failed(self, message: str) -> None:
        self.done = True
        self.query_one("#viewer-status", Static).update(Content.assemble(("✗ ", "$error"), visible(message)))

    def _status(self) -> None:
        lst = self.query_one(RecordList)
        boundaries = self.boundaries
        if self.done:
            state = f"{len(self.records):,} records · {fmt.size(self.total_bytes)}"
        else:
            state = (f"loading {fmt.size(self.loaded_bytes)} / {fmt.size(self.total_bytes)} · "
                     f"{len(self.records):,} records")
        self.query_one("#viewer-status", Static).update(Content.assemble(
            (state, "bold"), f" · {boundaries} compaction boundar{'y' if boundaries == 1 else 'ies'}",
            " · filter: ", (self.kind_filter, "bold $accent"),
            f" · showing {len(lst.rows):,}",
            (f" · search: {one_line(self.query_text)}" if self.query_text else "", "dim"),
            (self.match_text(), "bold")))

    def matches(self) -> list[int]:
        """Positions (in the shown rows) of the records the search matches; computed once per
        query, filter and load state."""
        key = (self.query_text.lower(), self.kind_filter, len(self.rows), len(self.records))
        if self._matches[0] != key:
            q = key[0]
            found = [pos for pos, i in enumerate(self.rows) if self.records[i].matches(q)] if q else []
            self._matches = (key, found)
        return self._matches[1]

    def match_text(self) -> str:
        """" · match k of N" (k: the match the cursor is on, "–" between matches), "" without a search.
        While the log loads the total is not known: " · match k · counting…" (never "3 of 2")."""
        if not self.query_text:
            return ""
        found = self.matches()
        if not found:
            return " · no match yet · counting…" if not self.done else " · no match"
        cursor = self.query_one(RecordList).cursor
        k = bisect.bisect_left(found, cursor)
        on_match = k < len(found) and found[k] == cursor
        if not self.done:
            return f" · match {k + 1:,} · counting…" if on_match else " · counting…"
        return f" · match {k + 1:,} of {len(found):,}" if on_match else f" · match – of {len(found):,}"

    # -- filtering, search, jumps -------------------------------------------------------------------
    def _keep(self, r: Record) -> bool:
        return r.passes(self.kind_filter)

    def _refilter(self) -> None:
        """Apply a new filter; the cursor stays on (or just after) the record it was on."""
        lst = self.query_one(RecordList)
        current = lst.current()
        self.rows = [i for i, r in enumerate(self.records) if self._keep(r)]
        lst.set_rows(self.records, self.rows)
        if current is not None:
            lst.cursor = next((n for n, i in enumerate(self.rows) if self.records[i].line >= current.line),
                              max(0, len(self.rows) - 1))
        self._show_detail(None)     # the cursor's row may hold another record now

    def watch_kind_filter(self, _value: str) -> None:
        if self.is_mounted:
            self._refilter()
            self._status()

    def action_cycle_filter(self) -> None:
        self.kind_filter = next_filter(self.kind_filter)

    def _search_box(self) -> Input:
        return self.query_one("#viewer-search", Input)

    def _show_search_box(self) -> None:
        """The box is drawn while searching or while a search is set; else the list has its rows."""
        self._search_box().set_class(self.searching or bool(self.query_text), "-shown")

    def action_search(self) -> None:
        self.searching = True
        self._show_search_box()
        self._search_box().focus()

    def _leave_search(self) -> None:
        """Back to the list, the search box showing the search in force (what was typed unsent goes)."""
        self.searching = False
        self._search_box().value = self.query_text
        self._show_search_box()
        self.query_one(RecordList).focus()

    @on(Input.Submitted, "#viewer-search")
    def _search_submitted(self, event: Input.Submitted) -> None:
        self.query_text = event.value.strip()
        self._leave_search()
        if self.query_text:
            self.action_find(1, from_current=True)
        else:
            self._status()

    def action_find(self, direction: int, from_current: bool = False) -> None:
        q = self.query_text.lower()
        if not q:
            self.notify("Type a search first: press / then Enter.", severity="warning")
            return
        lst = self.query_one(RecordList)
        found = self._scan(lst, lambda r: r.matches(q), direction, include_current=from_current)
        if found is None:
            further = "further " if not from_current else ""
            self.notify(f"No {further}match for {one_line(repr(self.query_text))}.", severity="warning", markup=False)
        self._status()

    def action_boundary(self, direction: int) -> None:
        lst = self.query_one(RecordList)
        if self._scan(lst, lambda r: r.boundary, direction) is None:
            self.notify("No further compaction boundary." if self.records else "Nothing loaded yet.")

    def _scan(self, lst: RecordList, pred, direction: int, include_current: bool = False) -> int | None:
        n = len(lst.rows)
        start = lst.cursor if include_current else lst.cursor + direction
        rng = range(start, n) if direction > 0 else range(start, -1, -1)
        for pos in rng:
            if pred(self.records[lst.rows[pos]]):
                lst.cursor = pos
                return pos
        return None

    @on(RecordList.CursorMoved)
    def _show_detail(self, event: RecordList.CursorMoved | None) -> None:
        if self.query_text:
            self._status()     # "match k of N" follows the cursor
        r = self.query_one(RecordList).current()
        detail = self.query_one("#viewer-detail", Static)
        detail.set_class(r is None, "-empty")
        if r is None:
            detail.update("")
            return
        head = f"line {r.line} · {one_line(r.kind)}{' · ' + one_line(r.role) if r.role else ''}\n"
        detail.update(Content.assemble((head, "bold"), visible(r.detail())))

    def action_close(self) -> None:
        """Esc in the search box leaves the search; on the list it closes the viewer (`q` typed
        in the box is a letter of the search: the box takes it before this binding)."""
        if self.searching or isinstance(self.focused, Input):
            self._leave_search()
            return
        self.dismiss(None)

    def on_descendant_focus(self, event) -> None:
        """A click in the search box is searching too."""
        if isinstance(event.widget, Input) and not self.searching:
            self.searching = True
            self._show_search_box()
