"""The `ctxtui replay` policy table: one column per policy, one row per figure (app/replay/report.py
builds the rows; this widget only shows them)."""
from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from agent_core.replay.report_model import SessionResult
from agent_core.security.visible_text import one_line

from app.replay.report import table_rows


class PolicyTable(DataTable):
    """Dollars total and by bucket, the ratio to cc, dollars net of re-reads and their ratio,
    overflows, compactions by layer, hit rate, user messages, references and content kept, for
    each policy of one session."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="none", zebra_stripes=True, show_cursor=False)
        self.rows_shown: list[tuple[str, list[str]]] = []

    def show(self, session: SessionResult) -> None:
        self.clear(columns=True)
        # Labels and cells can carry a log's words (a layer's name): shown on one line, control
        # characters visible, and as Text, since a DataTable parses a str cell as markup.
        self.rows_shown = rows = [(one_line(label), [one_line(c) for c in cells])
                                  for label, cells in table_rows(session)]
        keys = list(session.policies)
        names = [one_line(n) for n in keys]
        # Every size is set here from the content: DataTable measures `auto` columns and its own
        # `auto` size only once idle, and a screenshot or layout taken before then cuts the table.
        label_width = max((len(label) for label, _ in rows), default=0)
        widths = [max([len(name), *(len(cells[i]) for _, cells in rows)]) for i, name in enumerate(names)]
        self.add_column("", key="figure", width=label_width)
        for key, name, width in zip(keys, names, widths):
            self.add_column(Text(name, style="bold", justify="right"), key=key, width=width)
        for label, cells in rows:
            self.add_row(Text(label), *(Text(c, justify="right") for c in cells))
        self.styles.width = label_width + sum(widths) + 2 * self.cell_padding * (len(widths) + 1) + 1
        self.styles.height = len(rows) + (1 if self.show_header else 0)
