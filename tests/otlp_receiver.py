"""A loopback OTLP/HTTP receiver for the telemetry tests: POST /v1/traces and /v1/metrics, bodies
decoded with opentelemetry.proto, kept for the test to read; and two collectors that fail (one that
accepts the connection and never answers, a port that refuses)."""
from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (ExportMetricsServiceRequest,
                                                                          ExportMetricsServiceResponse)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (ExportTraceServiceRequest,
                                                                      ExportTraceServiceResponse)

KINDS = {"/v1/traces": (ExportTraceServiceRequest, ExportTraceServiceResponse),
         "/v1/metrics": (ExportMetricsServiceRequest, ExportMetricsServiceResponse)}


def value(any_value) -> Any:
    """An AnyValue as Python."""
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


def attrs(key_values) -> dict[str, Any]:
    return {kv.key: value(kv.value) for kv in key_values}


class OtlpReceiver:
    """`status`: what every POST is answered (200: decoded and kept; else refused with that code)."""

    def __init__(self, status: int = 200) -> None:
        self.traces: list[ExportTraceServiceRequest] = []
        self.metrics: list[ExportMetricsServiceRequest] = []
        self.headers: list[dict[str, str]] = []
        self.paths: list[str] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):   # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                owner.paths.append(self.path)
                owner.headers.append({k.lower(): v for k, v in self.headers.items()})
                kind = KINDS.get(self.path)
                if kind is None or status != 200:
                    self.send_response(404 if kind is None else status)
                    self.end_headers()
                    return
                req = kind[0]()
                req.ParseFromString(body)
                (owner.traces if self.path == "/v1/traces" else owner.metrics).append(req)
                out = kind[1]().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "OtlpReceiver":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    # ----- what arrived ---------------------------------------------------------------------
    def spans(self) -> list[tuple[dict, Any]]:
        """(resource attributes, span) of every span received."""
        return [(attrs(rs.resource.attributes), span) for req in self.traces for rs in req.resource_spans
                for ss in rs.scope_spans for span in ss.spans]

    def points(self, name: str) -> list[tuple[dict, Any]]:
        """(attributes, data point) of metric `name` in the latest export that holds it (cumulative:
        the latest is the total)."""
        for req in reversed(self.metrics):
            found = [(attrs(p.attributes), p) for rm in req.resource_metrics for sm in rm.scope_metrics
                     for m in sm.metrics if m.name == name
                     for p in getattr(m, m.WhichOneof("data")).data_points]
            if found:
                return found
        return []

    def metric_names(self) -> set[str]:
        return {m.name for req in self.metrics for rm in req.resource_metrics for sm in rm.scope_metrics
                for m in sm.metrics}


class SilentCollector:
    """Accepts TCP connections and never answers (a hung collector)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.conns: list[socket.socket] = []
        self._stop = False
        self.thread = threading.Thread(target=self._accept, daemon=True)

    def _accept(self) -> None:
        self.sock.settimeout(0.1)
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.conns.append(conn)

    def __enter__(self) -> "SilentCollector":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop = True
        self.thread.join(1)
        for c in self.conns:
            c.close()
        self.sock.close()


def refused_url() -> str:
    """A loopback port nothing listens on."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://127.0.0.1:{port}"
