"""The cost pane: models × token buckets with tokens and dollars, totals, cache hit rate, what
caching saved, what compaction itself cost and the burn rate — all as reported by `CostUpdate`.

The loop owns the arithmetic (agent_core.cost); this widget only lays the numbers out. Optional
figures the loop may not report (hit rate, savings, burn rate) show as "—" rather than guessed.
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

from .. import format as fmt

BUCKETS: tuple[tuple[str, str], ...] = (
    ("input", "input"),
    ("output", "output"),
    ("cache_write_5m", "cache write 5m"),
    ("cache_write_1h", "cache write 1h"),
    ("cache_read", "cache read"),
)


def bucket_usd(model_row: dict[str, Any], bucket: str) -> float | None:
    """Dollars for one bucket of one model, in whichever form the cost event carries them."""
    for key in ("usd_by_bucket", "usd", "cost_by_bucket"):
        d = model_row.get(key)
        if isinstance(d, dict) and bucket in d:
            return d[bucket]
    return model_row.get(f"{bucket}_usd")


def figure(ev: CostUpdate, extras: dict[str, Any], *names: str) -> Any:
    """An optional summary figure: an attribute of the event if it carries one, else what the app
    handed down from the agent's cost tracker (`extras`)."""
    for n in names:
        v = getattr(ev, n, None)
        if v is None:
            v = extras.get(n)
        if v is not None:
            return v
    return None


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
        table = self.query_one(DataTable)
        table.add_column("model / bucket", key="bucket")
        table.add_column("tokens", key="tokens")
        table.add_column("dollars", key="usd")
        self._render_cost(self.cost)

    def watch_cost(self, ev: CostUpdate | None) -> None:
        self._render_cost(ev)

    def _render_cost(self, ev: CostUpdate | None) -> None:
        if not self.is_mounted:
            return
        table = self.query_one(DataTable)
        table.clear()
        summary = self.query_one("#cost-summary", Static)
        if ev is None or not ev.by_model:
            summary.update(Content("no model calls yet"))
            return
        total_tokens = 0
        for model, row in ev.by_model.items():
            table.add_row(Text(model, style="bold"), "", Text(fmt.usd(row.get("cost_usd")), style="bold"),
                          key=f"model:{model}")
            for bucket, label in BUCKETS:
                n = int(row.get(bucket) or 0)
                total_tokens += n
                if n == 0 and bucket == "cache_write_1h":
                    continue  # rarely used; shown only when it has tokens
                table.add_row(Text("  " + label), Text(fmt.tokens(n), justify="right"),
                              Text(fmt.usd(bucket_usd(row, bucket)) if n else "", justify="right"),
                              key=f"{model}:{bucket}")
        table.add_row(Text("total", style="bold"), Text(fmt.tokens(total_tokens), style="bold", justify="right"),
                      Text(fmt.usd(ev.total_usd), style="bold", justify="right"), key="total")
        summary.update(self._summary(ev))

    def _summary(self, ev: CostUpdate) -> Content:
        hit = figure(ev, self.extras, "cache_hit_rate")
        saved = figure(ev, self.extras, "saved_usd")
        burn = figure(ev, self.extras, "burn_usd_per_hour")
        comp = (ev.by_purpose or {}).get("compaction") or {}
        comp_usd = comp.get("cost_usd") if comp else 0.0
        hit_text = fmt.percent(hit * 100 if hit is not None and hit <= 1 else hit)
        return Content.assemble(
            "cache hit ", (hit_text, "bold"), " · saved ", (fmt.usd(saved) if saved is not None else "—", "bold $success"),
            "\ncompaction ", (fmt.usd(comp_usd), "bold"),
            " · burn ", ((fmt.usd(burn) + "/h") if burn is not None else "—", "bold"))
