"""What the agent hands each event to when telemetry is on: the mapping, then the exporter.

`TelemetrySink(event)` never raises and never waits on the network (a broken exporter stops the
export, not the turn). The first time something could not be exported it says so once, through
`notify` (the agent's `live`: a Notice in the running turn's stream), naming the endpoint with any
password redacted and never a header. `close()` flushes, bounded (exporter.SHUTDOWN_S), and returns
that same warning when it was not said yet, for a front-end to print.
"""
from __future__ import annotations

from typing import Callable

from agent_core import events as ev
from agent_core.security.visible_text import one_line
from agent_core.telemetry.exporter import OtelExporter
from agent_core.telemetry.mapping import Mapper, PriceFn
from agent_core.telemetry.settings import TelemetrySettings


class TelemetrySink:
    def __init__(self, settings: TelemetrySettings, exporter: OtelExporter, mapper: Mapper,
                 notify: Callable[[ev.Event], object] | None = None,
                 report: Callable[[str], object] | None = None,
                 cost_now: Callable[[], ev.CostUpdate] | None = None) -> None:
        self.settings = settings
        self.report = report
        self.cost_now = cost_now      # the cost book at exit: a call booked after the last cost event counts
        self.exporter = exporter
        self.mapper = mapper
        self.notify = notify
        self.broken = False           # the exporter raised: export stops, the session goes on
        self.warned = False

    def __call__(self, e: ev.Event) -> None:
        if self.broken:
            return
        try:
            for r in self.mapper.records(e):
                self.exporter.record(r)
        except Exception:   # a bug of ours or the SDK's: stop exporting, never break the turn
            self.broken = True
        self._say_trouble()

    def warning(self) -> str:
        t = self.exporter.troubles
        what = f"{t.dropped:,} record{'s' if t.dropped != 1 else ''} dropped" if t.dropped else "nothing exported"
        return one_line(f"telemetry: could not export to {self.settings.shown_endpoint} ({t.reason or 'failed'}; "
                        f"{what}); the session goes on without it (docs/telemetry.md)")

    def _say_trouble(self) -> None:
        if self.warned or self.notify is None or not self.exporter.troubles.news():
            return
        self.warned = True
        try:
            self.notify(ev.Notice(self.warning()))
        except Exception:
            pass

    def close(self) -> str | None:
        """Flush and stop (bounded); the warning when data was dropped and not said yet (also handed
        to `report`, a front-end's stderr line, when one was given)."""
        if self.cost_now is not None:
            try:
                self(self.cost_now())
            except Exception:
                pass
        try:
            self.exporter.shutdown()
        except Exception:
            pass
        if self.warned or not self.exporter.troubles.news():
            return None
        self.warned = True
        line = self.warning()
        if self.report is not None:
            try:
                self.report(line)
            except Exception:
                pass
        return line


def start_sink(settings: TelemetrySettings, *, session_id: str, request_model: str, price: PriceFn,
               cost_before: ev.CostUpdate | None, notify: Callable[[ev.Event], object] | None,
               report: Callable[[str], object] | None = None, cost_now: Callable[[], ev.CostUpdate] | None = None,
               demo: bool = False) -> TelemetrySink:
    """The session's sink, its exporter started (threads, no connection yet)."""
    exporter = OtelExporter(settings, session_id, demo=demo)
    return TelemetrySink(settings, exporter, Mapper(request_model, price, cost_before), notify, report, cost_now)
