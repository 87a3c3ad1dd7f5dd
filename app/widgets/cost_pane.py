"""The cost pane: models × token buckets with tokens and dollars (per bucket too), totals, cache
hit rate, what caching saved, what compaction itself cost (and what its summary calls read from the
prompt cache) and the burn rate — all as reported by `CostUpdate` — and, maximized by /cost, the
API time (model calls added up) and the wall time (the session's age) the app hands down.

The arithmetic is agent_core.pricing.tally's (the same for the loop and `ctxtui watch`); this
widget only lays the numbers out. Figures that are unknown (a model without price data, the burn
rate in the first minute) show as "—" or blank rather than guessed.
"""
from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.reactive import reactive
from textual.widgets import Static

from agent_core.events import CostUpdate
from agent_core.security.visible_text import one_line
from agent_core.file_change import UNCOUNTED, FileChange

from app import format as fmt
from app.widgets.figure_table import FigureTable
from app.widgets.update_in_place import update_in_place

BUCKETS: tuple[tuple[str, str], ...] = (
    ("input", "input"),
    ("output", "output"),
    ("cache_write_5m", "cache write 5m"),
    ("cache_write_1h", "cache write 1h"),
    ("cache_read", "cache read"),
)
WIDE_AT = 90   # pane width (cells) from which the models × buckets grid fits
SIDE_FILES = 4  # changed files listed in the side pane; /cost (maximized) lists them all


_MISSING = object()


def bucket_usd(model_row: dict[str, Any], bucket: str) -> Any:
    """Dollars for one bucket of one model; `_MISSING` when the row has no per-bucket dollars
    (an unknown price: the model row still says so in its total)."""
    d = model_row.get("usd_by_bucket")
    return d.get(bucket, _MISSING) if isinstance(d, dict) else _MISSING


def figure(carried: Any, extras: dict[str, Any], name: str) -> Any:
    """An optional summary figure: the event's when it carries one, else what the app handed down
    from the agent (`extras[name]`)."""
    return carried if carried is not None else extras.get(name)


class CostPane(Vertical):
    """See module docstring. Set `cost` (a CostUpdate) from the app."""

    ALLOW_MAXIMIZE = True

    cost: reactive[CostUpdate | None] = reactive(None, always_update=True, init=False)
    # The files the agent's write and edit calls changed (counted by agent_core/tools/changed_files.py)
    changes: reactive[tuple[FileChange, ...]] = reactive((), init=False)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.extras: dict[str, Any] = {}
        # Held, not queried: the pane renders on every cost figure of a long session.
        self._table = FigureTable(id="cost-table")
        self._summary_view = Static(id="cost-summary")
        self._changes_view = Static(id="cost-changes")
        self._changes_view.display = False      # until a file is changed

    def compose(self) -> ComposeResult:
        yield self._table
        yield self._summary_view
        yield self._changes_view

    def on_mount(self) -> None:
        self.border_title = "Cost"
        self._table_layout = ""
        self._render_cost(self.cost)

    def on_resize(self) -> None:
        if self._wanted_layout() != self._table_layout:
            self._render_cost(self.cost)
            self._render_changes(self.changes)

    def watch_cost(self, ev: CostUpdate | None) -> None:
        self._render_cost(ev)

    def watch_changes(self, changes: tuple[FileChange, ...]) -> None:
        self._render_changes(changes)

    def _render_changes(self, changes: tuple[FileChange, ...]) -> None:
        if not self.is_mounted:
            return
        view = self._changes_view
        view.display = bool(changes)
        if changes:
            update_in_place(view, changes_text(changes, None if self._wanted_layout() == "wide" else SIDE_FILES))

    def _wanted_layout(self) -> str:
        """"wide" (models as rows, buckets as columns) when there is room, as when maximized by
        /cost; "long" (one row per model and bucket) in the side pane."""
        return "wide" if self.size.width >= WIDE_AT else "long"

    def _render_cost(self, ev: CostUpdate | None) -> None:
        if not self.is_mounted:
            return
        table = self._table
        layout = self._wanted_layout()
        self._table_layout = layout
        labels: list[tuple[str, Text]] = (
            [("model", Text("model")), *((b, Text(label, justify="right")) for b, label in BUCKETS),
             ("tokens", Text("tokens", justify="right")), ("usd", Text("dollars", justify="right"))]
            if layout == "wide" else
            [("bucket", Text("model / bucket")), ("tokens", Text("tokens", justify="right")),
             ("usd", Text("dollars", justify="right"))])
        rows = [] if ev is None or not ev.by_model else self._wide(ev) if layout == "wide" else self._long(ev)
        # Each column as wide as its widest cell (a figure is never cut).
        widths = tuple(max([label.cell_len] + [cells[i].cell_len for _, cells in rows])
                       for i, (_, label) in enumerate(labels))
        table.show([(key, label, width) for (key, label), width in zip(labels, widths)], rows)
        summary = self._summary_view
        update_in_place(summary, self._summary(ev) if ev is not None and rows else Content("no model calls yet"))

    @staticmethod
    def _long(ev: CostUpdate) -> list[tuple[str, list[Text]]]:
        rows: list[tuple[str, list[Text]]] = []
        total_tokens = 0
        for model, row in ev.by_model.items():
            rows.append((f"model:{model}", [Text(one_line(model), style="bold"), Text(""),
                                            Text(fmt.usd(row.get("cost_usd")), style="bold", justify="right")]))
            for bucket, label in BUCKETS:
                n = int(row.get(bucket) or 0)
                total_tokens += n
                if n == 0 and bucket == "cache_write_1h":
                    continue  # rarely used; shown only when it has tokens
                usd = bucket_usd(row, bucket)
                rows.append((f"{model}:{bucket}", [
                    Text("  " + label), Text(fmt.tokens(n), justify="right"),
                    Text(fmt.usd(usd) if n and usd is not _MISSING else "", justify="right")]))
        rows.append(("total", [Text("total", style="bold"),
                               Text(fmt.tokens(total_tokens), style="bold", justify="right"),
                               Text(fmt.usd(ev.total_usd), style="bold", justify="right")]))
        return rows

    @staticmethod
    def _wide(ev: CostUpdate) -> list[tuple[str, list[Text]]]:
        def cells(row: dict[str, Any], bold: bool = False) -> list[Text]:
            style = "bold" if bold else ""
            n = sum(int(row.get(b) or 0) for b, _ in BUCKETS)
            return ([Text(fmt.tokens(row.get(b) or 0), style=style, justify="right") for b, _ in BUCKETS]
                    + [Text(fmt.tokens(n), style=style, justify="right"),
                       Text(fmt.usd(row.get("cost_usd")), style=style, justify="right")])

        rows: list[tuple[str, list[Text]]] = []
        totals: dict[str, Any] = {b: 0 for b, _ in BUCKETS}
        for model, row in ev.by_model.items():
            rows.append((f"model:{model}", [Text(one_line(model), style="bold"), *cells(row)]))
            if any(bucket_usd(row, b) is not _MISSING for b, _ in BUCKETS):
                rows.append((f"usd:{model}", [
                    Text("  dollars", style="dim"),
                    *[Text(fmt.usd(v) if (v := bucket_usd(row, b)) is not _MISSING else "", style="dim",
                           justify="right") for b, _ in BUCKETS], Text(""), Text("")]))
            for b, _ in BUCKETS:
                totals[b] += int(row.get(b) or 0)
        purposes = ev.by_purpose or {}
        for purpose, row in (purposes.items() if len(purposes) > 1 else ()):  # one purpose: the total says it
            rows.append((f"purpose:{purpose}", [Text(f"  for {one_line(purpose)}", style="italic"), *cells(row)]))
        rows.append(("total", [Text("total", style="bold"), *cells({**totals, "cost_usd": ev.total_usd}, bold=True)]))
        return rows

    def _summary(self, ev: CostUpdate) -> Content:
        hit = figure(ev.cache_hit_rate, self.extras, "cache_hit_rate")
        saved = figure(ev.saved_usd, self.extras, "saved_usd")
        burn = self.extras.get("burn_usd_per_hour")     # the event never carries it
        comp = (ev.by_purpose or {}).get("compaction") or {}
        comp_usd = comp.get("cost_usd") if comp else 0.0
        comp_reads = int(comp.get("cache_read") or 0)
        hit_text = fmt.percent(hit * 100 if hit is not None and hit <= 1 else hit)
        parts: list = [
            "cache hit ", (hit_text, "bold"),
            " · saved ", (fmt.usd(saved) if saved is not None else "—", "bold $success"),
            "\ncompaction ", (fmt.usd(comp_usd), "bold")]
        if comp_reads:   # the summary call shares the main prefix: what it read from the cache
            parts += [" (", (fmt.short_tokens(comp_reads), "bold"), " read from cache)"]
        parts += [" · burn ", ((fmt.usd(burn) + "/h") if burn is not None else "—", "bold")]
        api_s, wall_s = self.extras.get("api_s"), self.extras.get("wall_s")
        if self._table_layout == "wide" and (api_s is not None or wall_s is not None):
            # /cost: where the time went — waiting on the model against the session's age
            parts += ["\nAPI time ", (fmt.duration(api_s) if api_s is not None else "—", "bold"),
                      " · wall time ", (fmt.duration(wall_s) if wall_s is not None else "—", "bold")]
        unknown = [m for m, row in ev.by_model.items() if row.get("cost_usd") is None]
        if unknown:
            parts.append((f"\n? no price data for {', '.join(one_line(m) for m in unknown)}", "dim"))
        return Content.assemble(*parts)


def changes_text(changes: tuple[FileChange, ...], limit: int | None) -> Content:
    """"changed 3 files +12 −4", then a row per file (up to `limit`, then how many more)."""
    added, removed = sum(c.added for c in changes), sum(c.removed for c in changes)
    n = len(changes)
    parts: list = ["changed ", (f"{n} file{'s' if n != 1 else ''}", "bold"), " ",
                   (f"+{added}", "bold $success"), " ", (f"−{removed}", "bold $error")]
    shown = changes if limit is None else changes[:limit]
    width = max(len(c.label) for c in shown)
    for c in shown:
        label = (c.label.rjust(width), "dim" if c.state in UNCOUNTED else "")
        mark = {"created": "A", "deleted": "D"}.get(c.state, "M")
        parts += ["\n", (mark, "dim"), " ", label, " ", fmt.one_line(c.shown, 60)]
    if len(shown) < n:
        parts += ["\n", (f"… {n - len(shown)} more: /cost lists them all, /diff shows the changes", "dim")]
    return Content.assemble(*parts)
