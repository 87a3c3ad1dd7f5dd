"""The transcript browser: ctxtui sessions and their compaction transcripts, and Claude Code logs
when its projects folder exists (`agent_core.logs.discover`); refreshed live with watchfiles; each opens read-only
with search, a filter by kind and jumps between compaction boundaries. Big files load in a thread worker in
batches, so the screen keeps answering keys while a 50 MB log is read.

Also the /resume picker (a list of ctxtui sessions).

File names, folder names and every field of a log are someone else's bytes: they are shown through
`agent_core.security.visible_text` (control characters visible, never obeyed) and as Text or
Content, never as markup (a DataTable parses a plain str cell as Rich markup)."""
from __future__ import annotations

import asyncio
import bisect
import threading
import time
from pathlib import Path

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.screen import ModalScreen, Screen
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import DataTable, Footer, Input, OptionList, Static
from textual.widgets.option_list import Option
from textual.worker import get_current_worker
from watchfiles import awatch

from agent_core.logs.discover import LogFile, list_logs, list_sessions
from agent_core.security.visible_text import one_line, visible

from agent_core.logs.transcript_files import Record, is_log_path, load, next_filter

from app import format as fmt

WATCH_DEBOUNCE_MS = 50
KIND_LABELS = {"session": "ctxtui session", "transcript": "transcript", "claude": "Claude Code"}


def _mtime_text(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(t))


class TranscriptBrowser(Screen[None]):
    """Lists the logs under the roots, newest first; Enter opens one."""

    BINDINGS = [
        Binding("escape,q", "close", "Close", id="transcripts.close"),
        Binding("r", "rescan", "Refresh", id="transcripts.refresh"),
    ]

    def __init__(self, sessions_root: Path | None, claude_root: Path | None,
                 viewer_gate: threading.Event | None = None) -> None:
        super().__init__()
        self.sessions_root = sessions_root
        self.claude_root = claude_root
        self.files: list[LogFile] = []
        self.watching = False
        self.viewer_gate = viewer_gate

    def compose(self) -> ComposeResult:
        with Vertical(id="browser"):
            yield Static(id="browser-roots")
            yield DataTable(id="browser-table", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#browser").border_title = "Transcripts"
        roots = [("ctxtui sessions", self.sessions_root), ("Claude Code", self.claude_root)]
        self.query_one("#browser-roots", Static).update(Content.assemble(*[
            part for label, root in roots for part in
            ((f"{label}: ", "dim"), (fmt.path(root) if root else "—", "bold"),
             ("" if root and root.is_dir() else " (not found)", "dim"), "   ")]))
        table = self.query_one(DataTable)
        table.add_column("kind", key="kind")
        table.add_column("session / project", key="group")
        table.add_column("file", key="name")
        table.add_column("size", key="size")
        table.add_column("modified", key="mtime")
        self.rescan()
        self.watch_roots()
        table.focus()

    def rescan(self) -> None:
        files = list_logs(self.sessions_root, self.claude_root)
        if [(f.path, f.size, f.mtime) for f in files] == [(f.path, f.size, f.mtime) for f in self.files]:
            return
        self.files = files
        table = self.query_one(DataTable)
        selected = None
        if table.row_count and table.cursor_row < table.row_count:
            selected = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        table.clear()
        for f in files:
            table.add_row(KIND_LABELS[f.kind], Text(fmt.one_line(str(f.group), 40)), Text(one_line(f.name)),
                          fmt.size(f.size), _mtime_text(f.mtime), key=str(f.path))
        if selected is not None:
            try:
                table.move_cursor(row=table.get_row_index(selected), animate=False)
            except Exception:  # the selected file went away
                pass

    def action_rescan(self) -> None:
        self.rescan()

    @work(exclusive=True, group="watch")
    async def watch_roots(self) -> None:
        """Rescan when anything under the roots changes (watchfiles, debounce in tens of ms)."""
        roots = [r for r in (self.sessions_root, self.claude_root) if r is not None and r.is_dir()]
        if not roots:
            return
        stop = asyncio.Event()
        try:
            self.watching = True
            async for _changes in awatch(*roots, debounce=WATCH_DEBOUNCE_MS, step=10, stop_event=stop,
                                        watch_filter=lambda _c, p: is_log_path(p)):
                self.rescan()
        finally:
            self.watching = False
            stop.set()

    @on(DataTable.RowSelected, "#browser-table")
    def open_selected(self, event: DataTable.RowSelected) -> None:
        path = Path(str(event.row_key.value))
        self.app.push_screen(TranscriptViewer(path, gate=self.viewer_gate))

    def action_close(self) -> None:
        self.dismiss(None)


class RecordList(ScrollView, can_focus=True):
    """A virtual list of records: only the visible lines are rendered, so 500,000 records scroll
    as fast as 50. Holds indices into the viewer's records (the current filter)."""

    COMPONENT_CLASSES = {"records--cursor", "records--boundary", "records--match", "records--dim"}
    DEFAULT_CSS = """
    RecordList > .records--cursor { background: $block-cursor-background; color: $block-cursor-foreground; }
    RecordList > .records--boundary { color: $accent; text-style: bold; }
    RecordList > .records--dim { color: $foreground-muted; }
    """
    BINDINGS = [
        Binding("up", "move(-1)", "Up", show=False),
        Binding("down", "move(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "jump(0)", "First", show=False),
        Binding("end", "jump(-1)", "Last", show=False),
    ]

    cursor: reactive[int] = reactive(0)

    class CursorMoved(Message):
        def __init__(self, index: int) -> None:
            super().__init__()
            self.index = index

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.records: list[Record] = []
        self.rows: list[int] = []

    def set_rows(self, records: list[Record], rows: list[int]) -> None:
        self.records = records
        self.rows = rows
        self.virtual_size = Size(0, len(rows))   # one line per record; long lines are cut (detail below)
        if self.cursor >= len(rows):
            self.cursor = max(0, len(rows) - 1)
        self.refresh()

    def validate_cursor(self, value: int) -> int:
        return max(0, min(value, len(self.rows) - 1)) if self.rows else 0

    def watch_cursor(self, value: int) -> None:
        self.scroll_to_region_visible(value)
        self.refresh()
        self.post_message(self.CursorMoved(value))

    def scroll_to_region_visible(self, row: int) -> None:
        top = self.scroll_offset.y
        height = max(1, self.scrollable_content_region.height)
        if row < top:
            self.scroll_to(y=row, animate=False)
        elif row >= top + height:
            self.scroll_to(y=row - height + 1, animate=False)

    def action_move(self, delta: int) -> None:
        self.cursor += delta

    def action_page(self, direction: int) -> None:
        self.cursor += direction * max(1, self.scrollable_content_region.height - 1)

    def action_jump(self, where: int) -> None:
        self.cursor = where if where >= 0 else len(self.rows) - 1

    def current(self) -> Record | None:
        if 0 <= self.cursor < len(self.rows):
            return self.records[self.rows[self.cursor]]
        return None

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        row = scroll_y + y
        width = self.size.width
        base = self.rich_style
        if row >= len(self.rows):
            return Strip.blank(width, base)
        r = self.records[self.rows[row]]
        dim = self._fg("records--dim")
        style = self._fg("records--boundary") if r.boundary else Style()
        # Segments go to the terminal as they are: a log's text must not carry a live escape.
        segments = [Segment(f"{r.line:>7} ", dim), Segment(f"{one_line(r.time):<9}", dim),
                    Segment(f"{one_line(r.kind):<11}", style + Style(bold=True)), Segment(one_line(r.summary), style)]
        strip = Strip(segments).crop_extend(scroll_x, scroll_x + width, None).apply_style(base)
        if row == self.cursor:
            cursor = self.get_component_rich_style("records--cursor")
            strip = Strip([Segment(text, (st or Style()) + cursor, ctl) for text, st, ctl in strip], strip.cell_length)
        return strip

    def _fg(self, name: str) -> Style:
        """A component style's colour and weight only: the row's background comes from the widget
        (or the cursor), never from each piece of text."""
        st = self.get_component_rich_style(name)
        return Style(color=st.color, bold=st.bold, italic=st.italic)


class TranscriptViewer(Screen[None]):
    """One log, read-only. `/` search (Enter or `n` finds the next match), `f` cycles the kind
    filter, `]` / `[` jump to the next / previous compaction boundary."""

    BINDINGS = [
        Binding("escape,q", "close", "Close", id="viewer.close"),
        Binding("slash", "search", "Search", id="viewer.search"),
        Binding("n", "find(1)", "Next match", id="viewer.next"),
        Binding("N", "find(-1)", "Prev match", id="viewer.prev"),
        Binding("f", "cycle_filter", "Filter", id="viewer.filter"),
        Binding("right_square_bracket", "boundary(1)", "Next compaction", id="viewer.next_boundary"),
        Binding("left_square_bracket", "boundary(-1)", "Prev compaction", id="viewer.prev_boundary"),
    ]

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

    def compose(self) -> ComposeResult:
        with Vertical(id="viewer"):
            yield Static(id="viewer-status")
            yield Input(placeholder="search (Enter: next match, Esc: back to the list)", id="viewer-search")
            yield RecordList(id="viewer-list")
            yield Static(id="viewer-detail")
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
        """" · match k of N" (k: the match the cursor is on, "–" between matches), "" without a search."""
        if not self.query_text:
            return ""
        found = self.matches()
        if not found:
            return " · no match"
        cursor = self.query_one(RecordList).cursor
        k = bisect.bisect_left(found, cursor)
        at = str(k + 1) if k < len(found) and found[k] == cursor else "–"
        return f" · match {at} of {len(found):,}"

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

    def watch_kind_filter(self, _value: str) -> None:
        if self.is_mounted:
            self._refilter()
            self._status()

    def action_cycle_filter(self) -> None:
        self.kind_filter = next_filter(self.kind_filter)

    def action_search(self) -> None:
        self.query_one("#viewer-search", Input).focus()

    @on(Input.Submitted, "#viewer-search")
    def _search_submitted(self, event: Input.Submitted) -> None:
        self.query_text = event.value.strip()
        self.query_one(RecordList).focus()
        self.action_find(1, from_current=True)

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
    def _show_detail(self, event: RecordList.CursorMoved) -> None:
        if self.query_text:
            self._status()     # "match k of N" follows the cursor
        r = self.query_one(RecordList).current()
        detail = self.query_one("#viewer-detail", Static)
        if r is None:
            detail.update("")
            return
        head = f"line {r.line} · {one_line(r.kind)}{' · ' + one_line(r.role) if r.role else ''}\n"
        detail.update(Content.assemble((head, "bold"), visible(r.detail())))

    def action_close(self) -> None:
        if isinstance(self.focused, Input):
            self.query_one(RecordList).focus()
            return
        self.dismiss(None)


class ResumeScreen(ModalScreen[str | None]):
    """/resume: pick a ctxtui session (newest first); returns its id or None."""

    BINDINGS = [Binding("escape", "close", "Close", id="resume.close")]

    def __init__(self, sessions_root: Path | None, current: str = "") -> None:
        super().__init__()
        self.sessions_root = sessions_root
        self.current = current

    def compose(self) -> ComposeResult:
        home = self.sessions_root.parent if self.sessions_root is not None else None
        sessions = [s for s in (list_sessions(home) if home is not None else []) if s.session_id != self.current]
        with Vertical(id="resume-dialog"):
            if not sessions:
                yield Static("No other saved sessions yet.")
            else:
                yield OptionList(*[Option(Content.assemble(
                    (one_line(s.session_id), "bold"), f"  {_mtime_text(s.modified)}  {fmt.size(s.size)}  ",
                    (fmt.one_line(s.title or "", 40), "italic")), id=s.session_id) for s in sessions],
                    id="resume-list")

    def on_mount(self) -> None:
        self.query_one("#resume-dialog").border_title = "Resume a session"

    @on(OptionList.OptionSelected)
    def _picked(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_close(self) -> None:
        self.dismiss(None)
