"""The per-signal OTLP headers (OTEL_EXPORTER_OTLP_TRACES_HEADERS, ..._METRICS_HEADERS) are a
credential: ctxtui sheds them from its environment at start, so the SDK can no longer read them
there. They still reach the collector, each with its own signal, from the held copy."""
from __future__ import annotations

from agent_core import events as ev
from agent_core.config import load_config
from agent_core.security import credentials
from agent_core.telemetry.exporter import OtelExporter
from agent_core.telemetry.mapping import Mapper
from agent_core.telemetry.settings import telemetry_settings
from agent_core.telemetry.sink import TelemetrySink
from compaction.scrub import forget_secrets, scrub
from tests.agent_helpers import make_workspace, user_dirs
from tests.otlp_receiver import OtlpReceiver

TRACE_TOKEN = "trace-tok-0123456789abcdefSECRET"


def test_a_signal_s_own_headers_come_from_the_held_credentials(tmp_path, monkeypatch):
    """What shed_from_environment leaves: the variable gone from os.environ, its value held."""
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS", raising=False)
    monkeypatch.setitem(credentials._held, "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
                        f"authorization=Bearer%20{TRACE_TOKEN}")
    cfg = load_config({"model": "demo"}, environ={**user_dirs(), "CTXTUI_OTEL_ENDPOINT": "http://127.0.0.1:9",
                                                  "OTEL_EXPORTER_OTLP_HEADERS": "x-team=ctx,authorization=common"},
                      workspace=make_workspace(tmp_path))
    try:
        s = telemetry_settings(cfg)
        assert s.headers_for("traces") == {"authorization": f"Bearer {TRACE_TOKEN}", "x-team": "ctx"}
        assert s.headers_for("metrics") == {"authorization": "common", "x-team": "ctx"}
        assert TRACE_TOKEN not in repr(s) and TRACE_TOKEN not in scrub(f"sent {TRACE_TOKEN}")
    finally:
        forget_secrets()


def test_each_signal_is_sent_with_its_own_headers(tmp_path):
    env = {**user_dirs(), "OTEL_EXPORTER_OTLP_TRACES_HEADERS": f"authorization=Bearer%20{TRACE_TOKEN}"}
    with OtlpReceiver() as rx:
        cfg = load_config({"model": "demo"}, environ={**env, "CTXTUI_OTEL_ENDPOINT": rx.url},
                          workspace=make_workspace(tmp_path))
        settings = telemetry_settings(cfg, environ=env)
        sink = TelemetrySink(settings, OtelExporter(settings, "s1"), Mapper("m", lambda *a: 0.5))
        sink(ev.TurnStarted(turn=1, prompt="p"))
        sink(ev.ModelCall(message_id="id", model="m", purpose="main", usage={"output_tokens": 3}))
        sink(ev.TurnFinished(stop_reason="end_turn", turns=1))
        sink.close()
    forget_secrets()
    sent = dict(zip(rx.paths, rx.headers))
    assert set(sent) == {"/v1/traces", "/v1/metrics"}
    assert sent["/v1/traces"].get("authorization") == f"Bearer {TRACE_TOKEN}"
    assert "authorization" not in sent["/v1/metrics"]
