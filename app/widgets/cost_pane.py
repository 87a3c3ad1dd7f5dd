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
from textual.widgets import DataTable, Static

from agent_core.events import CostUpdate
from agent_core.security.visible_text import one_line

from app import format as fmt

BUCKETS: tuple[tuple[str, str], ...] = (
    ("input", "input"),
    ("output", "output"),
    ("cache_write_5m", "cache write 5m"),
    ("cache_write_1h", "cache write 1h"),
    ("cache_read", "cache read"),
)
WIDE_AT = 90   # pane width (cells) from which the models × buckets grid fits


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

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.extras: dict[str, Any] = {}

    def compose(self) -> ComposeResult:
        table = DataTable(id="cost-table", show_cursor=False, zebra_stripes=False, cell_padding=1)
        yield table
        yield Static(id="cost-summary")

    def on_mount(self) -> None:
        self.border_title = "Cost"
        self._table_layout = ""
        self._render_cost(self.cost)

    def on_resize(self) -> None:
        if self._wanted_layout() != self._table_layout:
            self._render_cost(self.cost)

    def watch_cost(self, ev: CostUpdate | None) -> None:
        self._render_cost(ev)

    def _wanted_layout(self) -> str:
        """"wide" (models as rows, buckets as columns) when there is room, as when maximized by
        /cost; "long" (one row per model and bucket) in the side pane."""
        return "wide" if self.size.width >= WIDE_AT else "long"

    def _render_cost(self, ev: CostUpdate | None) -> None:
        if not self.is_mounted:
            return
        table = self.query_one(DataTable)
        layout = self._wanted_layout()
        if layout != self._table_layout:
            table.clear(columns=True)
            if layout == "wide":
                table.add_column("model", key="model")
                for bucket, label in BUCKETS:
                    table.add_column(Text(label, justify="right"), key=bucket)
                table.add_column(Text("tokens", justify="right"), key="tokens")
                table.add_column(Text("dollars", justify="right"), key="usd")
            else:
                table.add_column("model / bucket", key="bucket")
                table.add_column(Text("tokens", justify="right"), key="tokens")
                table.add_column(Text("dollars", justify="right"), key="usd")
            self._table_layout = layout
        table.clear()
        summary = self.query_one("#cost-summary", Static)
        if ev is None or not ev.by_model:
            summary.update(Content("no model calls yet"))
            return
        if layout == "wide":
            self._wide(table, ev)
        else:
            self._long(table, ev)
        summary.update(self._summary(ev))

    @staticmethod
    def _long(table: DataTable, ev: CostUpdate) -> None:
        total_tokens = 0
        for model, row in ev.by_model.items():
            table.add_row(Text(one_line(model), style="bold"), "", Text(fmt.usd(row.get("cost_usd")), style="bold",
                                                              justify="right"), key=f"model:{model}")
            for bucket, label in BUCKETS:
                n = int(row.get(bucket) or 0)
                total_tokens += n
                if n == 0 and bucket == "cache_write_1h":
                    continue  # rarely used; shown only when it has tokens
                usd = bucket_usd(row, bucket)
                table.add_row(Text("  " + label), Text(fmt.tokens(n), justify="right"),
                              Text(fmt.usd(usd) if n and usd is not _MISSING else "", justify="right"),
                              key=f"{model}:{bucket}")
        table.add_row(Text("total", style="bold"), Text(fmt.tokens(total_tokens), style="bold", justify="right"),
                      Text(fmt.usd(ev.total_usd), style="bold", justify="right"), key="total")

    @staticmethod
    def _wide(table: DataTable, ev: CostUpdate) -> None:
        def cells(row: dict[str, Any], bold: bool = False) -> list[Text]:
            style = "bold" if bold else ""
            n = sum(int(row.get(b) or 0) for b, _ in BUCKETS)
            return ([Text(fmt.tokens(row.get(b) or 0), style=style, justify="right") for b, _ in BUCKETS]
                    + [Text(fmt.tokens(n), style=style, justify="right"),
                       Text(fmt.usd(row.get("cost_usd")), style=style, justify="right")])

        totals: dict[str, Any] = {b: 0 for b, _ in BUCKETS}
        for model, row in ev.by_model.items():
            table.add_row(Text(one_line(model), style="bold"), *cells(row), key=f"model:{model}")
            if any(bucket_usd(row, b) is not _MISSING for b, _ in BUCKETS):
                table.add_row(Text("  dollars", style="dim"),
                              *[Text(fmt.usd(v) if (v := bucket_usd(row, b)) is not _MISSING else "", style="dim",
                                     justify="right") for b, _ in BUCKETS], "", "", key=f"usd:{model}")
            for b, _ in BUCKETS:
                totals[b] += int(row.get(b) or 0)
        purposes = ev.by_purpose or {}
        for purpose, row in (purposes.items() if len(purposes) > 1 else ()):  # one purpose: the total says it
            table.add_row(Text(f"  for {one_line(purpose)}", style="italic"), *cells(row), key=f"purpose:{purpose}")
        table.add_row(Text("total", style="bold"), *cells({**totals, "cost_usd": ev.total_usd}, bold=True),
                      key="total")

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
