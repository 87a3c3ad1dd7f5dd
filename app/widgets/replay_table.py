"""The `ctxtui replay` policy table: one column per policy, one row per figure (app/replay_report.py
builds the rows; this widget only shows them)."""
from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from ..replay_report import SessionResult, table_rows


class PolicyTable(DataTable):
    """Dollars total and by bucket, the ratio to cc, overflows, compactions by layer, hit rate,
    user messages and references kept, for each policy of one session."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="none", zebra_stripes=True, show_cursor=False)
        self.rows_shown: list[tuple[str, list[str]]] = []

    def show(self, session: SessionResult) -> None:
        self.clear(columns=True)
        self.add_column("", key="figure")
        for name in session.policies:
            self.add_column(Text(name, style="bold", justify="right"), key=name)
        self.rows_shown = table_rows(session)
        for label, cells in self.rows_shown:
            self.add_row(label, *(Text(c, justify="right") for c in cells))
        # A size from the content, set now: DataTable sizes itself for `auto` only once idle, so a
        # layout done before then (the notes beside it, the scroll bar) would cut the table.
        widths = [max((len(label) for label, _ in self.rows_shown), default=0)]
        widths += [max([len(name), *(len(cells[i]) for _, cells in self.rows_shown)])
                   for i, name in enumerate(session.policies)]
        self.styles.width = sum(w + 2 * self.cell_padding for w in widths) + 1
        self.styles.height = len(self.rows_shown) + (1 if self.show_header else 0)
