"""The OpenTelemetry SDK's side: a tracer and a meter exporting over OTLP/HTTP (protobuf), and the
instruments the records go to (the names and units: docs/telemetry.md). Loaded only when a
collector is configured (agent_core/telemetry/settings.py).

Nothing here blocks the loop: a span ends into a bounded queue that a worker thread exports, the
metrics are read and exported by a thread of their own, each export gives up after
EXPORT_TIMEOUT_S, and a full queue drops the oldest. Failures are counted (`Troubles`), never
raised, and the SDK's own log lines are kept out of the terminal (they may name the endpoint, and
the TUI owns the screen). `shutdown` is bounded by SHUTDOWN_S whatever the collector does.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricExportResult, MetricsData, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExportResult

from agent_core.telemetry.mapping import (CallRecord, CompactionRecord, ContextRecord, CostRecord, Record,
                                          TurnRecord)
from agent_core.telemetry.settings import TelemetrySettings
from agent_core.version import __version__

EXPORT_TIMEOUT_S = 1.0        # one export (retries included) gives up after this long
SHUTDOWN_S = 1.5              # flushing at exit waits at most this long, in all
SPAN_QUEUE = 512              # spans waiting for export; beyond this the oldest are dropped
SPAN_BATCH = 128
SPAN_DELAY_MS = 1_000         # a finished span waits at most this long for its batch
# The GenAI conventions' advice for gen_ai.client.token.usage and gen_ai.client.operation.duration
TOKEN_BOUNDS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864]
DURATION_BOUNDS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92]
PROVIDER = "anthropic"
DEMO_PROVIDER = "ctxtui.demo"  # the offline demo model answers, not Anthropic's API
NO_ANSWER = "no answer from the collector: refused, unreachable or too slow"


class Troubles:
    """What could not be exported, counted across threads; `news()` is true once per new kind."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.failed_batches = 0
        self.dropped = 0          # spans or metric points that never reached the collector
        self.reason = ""          # the first failure, in words safe to show (no header, no body)
        self._said = False

    def failed(self, items: int, reason: str) -> None:
        with self._lock:
            self.failed_batches += 1
            self.dropped += max(0, items)
            self.reason = self.reason or reason

    def because(self, reason: str) -> None:
        """Why exports fail, when the SDK said it before the failure was counted."""
        with self._lock:
            self.reason = self.reason or reason

    def news(self) -> bool:
        with self._lock:
            if self._said or not (self.failed_batches or self.dropped):
                return False
            self._said = True
            return True


class _Silenced(logging.Handler):
    """Takes the SDK's log records (export failures, a full queue): counted, never printed. One for
    the process; each live exporter's Troubles hears of a dropped record."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.live: list[Troubles] = []

    def emit(self, record: logging.LogRecord) -> None:
        msg = str(record.msg)
        if "dropping" in msg.lower():
            for troubles in list(self.live):
                troubles.failed(1, "the export queue was full")
        elif msg.startswith("Failed to export") and isinstance(record.args, tuple) and len(record.args) > 1 \
                and isinstance(record.args[1], int):      # "... batch code: %s, reason: %s": the HTTP status
            for troubles in list(self.live):
                troubles.because(_reason(record.args[1]))


_SILENCED = _Silenced()


def _reason(status: int | None) -> str:
    return f"the collector answered HTTP {status}" if status else NO_ANSWER


class _Spans(OTLPSpanExporter):
    def __init__(self, troubles: Troubles, **kw) -> None:
        super().__init__(**kw)
        self.troubles = troubles

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            result = super().export(spans)
        except Exception:
            result = SpanExportResult.FAILURE
        if result is not SpanExportResult.SUCCESS:
            self.troubles.failed(len(spans), NO_ANSWER)
        return result


class _Metrics(OTLPMetricExporter):
    def __init__(self, troubles: Troubles, **kw) -> None:
        super().__init__(**kw)
        self.troubles = troubles

    def export(self, metrics_data: MetricsData, timeout_millis: float | None = 10_000, **kw) -> MetricExportResult:
        try:
            result = super().export(metrics_data, timeout_millis=timeout_millis, **kw)
        except Exception:
            result = MetricExportResult.FAILURE
        if result is not MetricExportResult.SUCCESS:
            points = sum(len(m.data.data_points) for rm in metrics_data.resource_metrics
                         for sm in rm.scope_metrics for m in sm.metrics)
            self.troubles.failed(points, NO_ANSWER)
        return result


def _ns(seconds: float) -> int:
    return int(seconds * 1e9)


class OtelExporter:
    """The session's tracer and meter. `record(r)` takes one record on the loop's thread and only
    touches memory; the SDK's threads do the network."""

    def __init__(self, settings: TelemetrySettings, session_id: str, *, demo: bool = False) -> None:
        self.troubles = Troubles()
        self._quiet_sdk_logs()
        resource = Resource.create({"service.name": settings.service_name, "service.version": __version__,
                                    "session.id": session_id})
        self.session_id = session_id
        self.provider = DEMO_PROVIDER if demo else PROVIDER
        self._span_processor = BatchSpanProcessor(
            _Spans(self.troubles, endpoint=settings.url("traces"), headers=settings.headers_for("traces"),
                   timeout=EXPORT_TIMEOUT_S),
            max_queue_size=SPAN_QUEUE, max_export_batch_size=SPAN_BATCH, schedule_delay_millis=SPAN_DELAY_MS,
            export_timeout_millis=EXPORT_TIMEOUT_S * 1000)
        self.tracer_provider = TracerProvider(resource=resource, shutdown_on_exit=False)
        self.tracer_provider.add_span_processor(self._span_processor)
        self.tracer = self.tracer_provider.get_tracer("ctxtui", __version__)
        self._reader = PeriodicExportingMetricReader(
            _Metrics(self.troubles, endpoint=settings.url("metrics"), headers=settings.headers_for("metrics"),
                     timeout=EXPORT_TIMEOUT_S),
            export_timeout_millis=EXPORT_TIMEOUT_S * 1000)   # the interval: OTEL_METRIC_EXPORT_INTERVAL, else 60 s
        self.meter_provider = MeterProvider(resource=resource, metric_readers=[self._reader], shutdown_on_exit=False)
        m = self.meter_provider.get_meter("ctxtui", __version__)
        self.tokens = m.create_counter("ctxtui.token.usage", unit="{token}",
                                       description="Tokens of model calls, by type (bucket), model and purpose")
        self.cost = m.create_counter("ctxtui.cost.usage", unit="USD",
                                     description="Dollars of model calls, by type (bucket) and model")
        self.compactions = m.create_counter("ctxtui.compaction.count", unit="{compaction}",
                                            description="Compactions, by layer and trigger")
        self.removed = m.create_counter("ctxtui.compaction.tokens_removed", unit="{token}",
                                        description="Tokens compactions took out of the context, by layer")
        self.context = m.create_gauge("ctxtui.context.tokens", unit="{token}",
                                      description="What the next request holds")
        self.window = m.create_gauge("ctxtui.context.window", unit="{token}", description="The context window")
        self.threshold = m.create_gauge("ctxtui.context.threshold", unit="{token}",
                                        description="The auto-compact threshold")
        self.gen_ai_tokens = m.create_histogram("gen_ai.client.token.usage", unit="{token}",
                                                description="Tokens per model call (GenAI conventions)",
                                                explicit_bucket_boundaries_advisory=TOKEN_BOUNDS)
        self.gen_ai_duration = m.create_histogram("gen_ai.client.operation.duration", unit="s",
                                                  description="Seconds per model call (GenAI conventions)",
                                                  explicit_bucket_boundaries_advisory=DURATION_BOUNDS)
        self._turn: trace.Span | None = None
        self._closed = False

    def _quiet_sdk_logs(self) -> None:
        log = logging.getLogger("opentelemetry")
        if _SILENCED not in log.handlers:
            log.addHandler(_SILENCED)
        log.propagate = False      # the terminal is the user's (and the TUI's): the SDK's lines never reach it
        _SILENCED.live.append(self.troubles)

    # ----- records ------------------------------------------------------------------------------
    def record(self, r: Record) -> None:
        if self._closed:
            return
        if isinstance(r, CallRecord):
            self._call(r)
        elif isinstance(r, CostRecord):
            self.cost.add(r.usd, {"type": r.bucket, "model": r.model})
        elif isinstance(r, CompactionRecord):
            self._compaction(r)
        elif isinstance(r, ContextRecord):
            attrs = {"model": r.model}
            self.context.set(r.tokens, attrs)
            self.window.set(r.window, attrs)
            self.threshold.set(r.threshold, attrs)
        elif isinstance(r, TurnRecord):
            self._turn_record(r)

    def _context(self):
        return trace.set_span_in_context(self._turn) if self._turn is not None else None

    def _call(self, r: CallRecord) -> None:
        base = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": self.provider,
                "gen_ai.request.model": r.request_model, "gen_ai.response.model": r.response_model}
        for bucket, n in r.buckets.items():
            if n:
                self.tokens.add(n, {"type": bucket, "model": r.response_model, "purpose": r.purpose})
        self.gen_ai_tokens.record(r.input_tokens, {**base, "gen_ai.token.type": "input"})
        self.gen_ai_tokens.record(r.buckets.get("output", 0), {**base, "gen_ai.token.type": "output"})
        self.gen_ai_duration.record(r.duration_s, base)
        attrs: dict = {**base, "gen_ai.system": self.provider,   # the older conventions' name for the provider
                       "gen_ai.response.id": r.response_id,
                       "gen_ai.usage.input_tokens": r.input_tokens,
                       "gen_ai.usage.output_tokens": r.buckets.get("output", 0),
                       "gen_ai.usage.cache_read.input_tokens": r.buckets.get("cache_read", 0),
                       "gen_ai.usage.cache_creation.input_tokens": r.cache_creation_tokens,
                       "ctxtui.usage.uncached_input_tokens": r.buckets.get("input", 0),
                       "ctxtui.usage.cache_write_5m_tokens": r.buckets.get("cache_write_5m", 0),
                       "ctxtui.usage.cache_write_1h_tokens": r.buckets.get("cache_write_1h", 0),
                       "ctxtui.purpose": r.purpose, "session.id": self.session_id}
        if r.cost_usd is not None:
            attrs["ctxtui.cost_usd"] = r.cost_usd
        span = self.tracer.start_span(f"chat {r.request_model}", context=self._context(),
                                      kind=trace.SpanKind.CLIENT, attributes=attrs,
                                      start_time=_ns(r.end_s - r.duration_s))
        span.end(end_time=_ns(r.end_s))

    def _compaction(self, r: CompactionRecord) -> None:
        self.compactions.add(1, {"layer": r.layer, "trigger": r.trigger})
        if r.tokens_before > r.tokens_after:
            self.removed.add(r.tokens_before - r.tokens_after, {"layer": r.layer})
        attrs: dict = {"ctxtui.compaction.layer": r.layer, "ctxtui.compaction.trigger": r.trigger,
                       "ctxtui.compaction.tokens_before": r.tokens_before,
                       "ctxtui.compaction.tokens_after": r.tokens_after, "session.id": self.session_id}
        if r.rewrite_cost_usd is not None:
            attrs["ctxtui.compaction.cache_rewrite_cost_usd"] = r.rewrite_cost_usd
        if r.summary_cost_usd is not None:
            attrs["ctxtui.compaction.summary_cost_usd"] = r.summary_cost_usd
        span = self.tracer.start_span(f"compaction {r.layer}", context=self._context(), attributes=attrs,
                                      start_time=_ns(r.end_s - r.duration_s))
        span.end(end_time=_ns(r.end_s))

    def _turn_record(self, r: TurnRecord) -> None:
        if not r.finished:
            self._end_turn("")
            self._turn = self.tracer.start_span("invoke_agent ctxtui", attributes={
                "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "ctxtui",
                "gen_ai.provider.name": self.provider, "ctxtui.turn": r.turn, "session.id": self.session_id})
        else:
            self._end_turn(r.stop_reason)

    def _end_turn(self, stop_reason: str) -> None:
        if self._turn is not None:
            if stop_reason:
                self._turn.set_attribute("ctxtui.stop_reason", stop_reason)
            self._turn.end()
            self._turn = None

    # ----- the end ------------------------------------------------------------------------------
    def shutdown(self, budget_s: float = SHUTDOWN_S) -> None:
        """Flush what is queued and stop, in at most about `budget_s`: the spans' and the metrics'
        last exports run side by side in threads of their own, and whatever is still waiting on the
        collector then is left to those (daemon) threads. A collector that never answers costs
        `budget_s`, no longer."""
        if self._closed:
            return
        self._closed = True
        self._end_turn("")
        deadline = time.monotonic() + budget_s
        ms = budget_s * 1000
        steps = [threading.Thread(target=_quietly(self.tracer_provider.shutdown), daemon=True),
                 threading.Thread(target=_quietly(lambda: self.meter_provider.shutdown(timeout_millis=ms)),
                                  daemon=True)]
        for t in steps:
            t.start()
        for t in steps:
            t.join(max(0.0, deadline - time.monotonic()))
        if self.troubles in _SILENCED.live:
            _SILENCED.live.remove(self.troubles)


def _quietly(fn):
    def run() -> None:
        try:
            fn()
        except Exception:
            pass
    return run
