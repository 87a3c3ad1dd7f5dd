"""OpenTelemetry export of a session's usage (docs/telemetry.md): off unless a collector is named.

`settings.py` decides whether to export and where, with no OpenTelemetry import; `mapping.py`
turns the loop's events into plain records (no OpenTelemetry either); `exporter.py` is the SDK's
side (providers, OTLP/HTTP exporters, instruments), loaded only when a collector is configured;
`sink.py` joins the two and is what the agent hands each event to. Nothing here may slow or break
a turn: every failure is counted and said once, never raised into the loop.
"""
