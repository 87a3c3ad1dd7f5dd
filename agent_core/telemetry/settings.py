"""Whether a session exports telemetry, where to, and with what headers: from the `Config`
(`CTXTUI_OTEL_ENDPOINT`, else `OTEL_EXPORTER_OTLP_ENDPOINT`; `OTEL_EXPORTER_OTLP_HEADERS`;
`OTEL_SERVICE_NAME`) and the environment (`OTEL_EXPORTER_OTLP_{TRACES,METRICS}_HEADERS`, which ctxtui
holds in memory once started, so the SDK cannot read them itself). No OpenTelemetry import: a
session without a collector loads none of it.

The headers may carry a token: their values are registered with the scrubber here, and nothing in
this package ever formats them into a message.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from urllib.parse import unquote

from compaction.scrub import redact_url, register_secret

from agent_core.config import Config
from agent_core.security.credentials import with_held

SIGNALS = ("traces", "metrics")


@dataclass(frozen=True)
class TelemetrySettings:
    endpoint: str                                   # the collector's base URL, no trailing slash
    service_name: str = "ctxtui"
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    signal_headers: dict[str, dict[str, str]] = field(default_factory=dict, repr=False)   # {signal: headers}

    def headers_for(self, signal: str) -> dict[str, str]:
        """The headers of one signal's exports: the common ones, a signal's own winning (OTLP's rule)."""
        return {**self.headers, **self.signal_headers.get(signal, {})}

    def url(self, signal: str) -> str:
        """The OTLP/HTTP URL of one signal: the base endpoint plus /v1/<signal> (the OTLP spec's rule
        for OTEL_EXPORTER_OTLP_ENDPOINT)."""
        return f"{self.endpoint}/v1/{signal}"

    @property
    def shown_endpoint(self) -> str:
        """The endpoint as a message may show it (a password in the URL redacted)."""
        return redact_url(self.endpoint) or ""


def parse_headers(text: str | None) -> dict[str, str]:
    """`key1=value1,key2=value2` (W3C baggage form, values percent-encoded) as the OTLP exporters
    read OTEL_EXPORTER_OTLP_HEADERS; a pair without `=` is skipped. Every value (and the raw text)
    is registered as a secret, so no later message or file can hold it."""
    if not text:
        return {}
    register_secret(text)
    out: dict[str, str] = {}
    for pair in text.split(","):
        key, eq, value = pair.partition("=")
        key, value = unquote(key).strip().lower(), unquote(value).strip()
        if not eq or not key:
            continue
        register_secret(value, value.split(" ", 1)[-1])   # "Bearer TOKEN": the token alone too
        out[key] = value
    return out


def telemetry_settings(config: Config, environ: dict[str, str] | None = None) -> TelemetrySettings | None:
    """Where this session's telemetry goes; None when no collector is configured (nothing loads),
    or when OTEL_SDK_DISABLED=true (the OpenTelemetry spec's switch for every SDK) says not to."""
    endpoint = getattr(config, "otel_endpoint", None)
    env = with_held(os.environ) if environ is None else environ
    if not endpoint or env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    own = {s: parse_headers(env.get(f"OTEL_EXPORTER_OTLP_{s.upper()}_HEADERS")) for s in SIGNALS}
    return TelemetrySettings(endpoint=endpoint.rstrip("/"),
                             service_name=getattr(config, "otel_service_name", None) or "ctxtui",
                             headers=parse_headers(getattr(config, "otel_headers", None)),
                             signal_headers={s: h for s, h in own.items() if h})
