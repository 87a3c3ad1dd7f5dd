"""The transcript browser: ctxtui sessions and their compaction transcripts, and Claude Code logs
when its projects folder exists (`agent_core.logs.discover`); refreshed live with watchfiles; each opens
read-only in the viewer (app/tui/screens/transcript_viewer.py).

File names, folder names and every field of a log are someone else's bytes: they are shown through
`agent_core.security.visible_text` (control characters visible, never obeyed) and as Text or
Content, never as markup (a DataTable parses a plain str cell as Rich markup)."""
from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from agent_core.logs.discover import LogFile, list_logs
from agent_core.security.visible_text import one_line

from agent_core.logs.transcript_files import is_log_path

from app import format as fmt
from app.tui.screens.transcript_viewer import TranscriptViewer

WATCH_DEBOUNCE_MS = 50
KIND_LABELS = {"session": "ctxtui session", "transcript": "transcript", "claude": "Claude Code"}


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
                          fmt.size(f.size), fmt.date_time(f.mtime), key=str(f.path))
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
        # watchfiles (with anyio) loads when the browser first watches, not before the first paint
        from watchfiles import awatch  # noqa: PLC0415
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
