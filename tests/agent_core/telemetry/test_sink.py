"""The sink between the agent and the exporter: failures said once, as a Notice in the turn (or a
line at exit), never raised into the loop; and a demo session exports through the agent's hook."""
from __future__ import annotations

import asyncio

from agent_core import events as ev
from agent_core.config import load_config
from agent_core.loop.factory import build_agent
from agent_core.telemetry.exporter import OtelExporter, Troubles
from agent_core.telemetry.mapping import Mapper
from agent_core.telemetry.settings import TelemetrySettings
from agent_core.telemetry.sink import TelemetrySink
from tests.agent_helpers import collect, make_workspace, user_dirs
from tests.otlp_receiver import OtlpReceiver, attrs

SETTINGS = TelemetrySettings("http://u:pw-0123456789abcdef@127.0.0.1:9", headers={"authorization": "Bearer x"})


class _Exporter:
    def __init__(self, fail: bool = False) -> None:
        self.troubles = Troubles()
        self.got: list = []
        self.fail = fail
        self.closed = False

    def record(self, r) -> None:
        if self.fail:
            raise RuntimeError("SDK bug")
        self.got.append(r)

    def shutdown(self) -> None:
        self.closed = True


def _sink(exporter, notify=None, report=None) -> TelemetrySink:
    return TelemetrySink(SETTINGS, exporter, Mapper("m", lambda *a: None), notify, report)  # type: ignore[arg-type]


def test_a_failure_is_said_once_as_a_notice_without_secrets():
    said: list[ev.Event] = []
    x = _Exporter()
    sink = _sink(x, notify=said.append)
    sink(ev.TurnStarted(turn=1, prompt="p"))
    assert said == [] and len(x.got) == 1
    x.troubles.failed(3, "no answer from the collector")
    x.troubles.failed(2, "no answer from the collector")
    for _ in range(3):
        sink(ev.ContextUpdate(tokens=1, window=2, threshold=1, state="ok", percent_left=50.0))
    assert len(said) == 1 and isinstance(said[0], ev.Notice)
    msg = said[0].message
    assert "5 records dropped" in msg and "no answer" in msg and "127.0.0.1:9" in msg
    assert "pw-0123456789abcdef" not in msg and "Bearer" not in msg and "\n" not in msg
    assert sink.close() is None and x.closed        # said already: nothing more at exit


def test_a_failure_at_exit_is_reported_once():
    lines: list[str] = []
    x = _Exporter()
    sink = _sink(x, report=lines.append)
    x.troubles.failed(1, "the collector answered HTTP 503")
    assert sink.close() == lines[0] and len(lines) == 1 and "HTTP 503" in lines[0]


def test_an_exporter_that_raises_stops_exporting_never_the_turn():
    x = _Exporter(fail=True)
    sink = _sink(x)
    sink(ev.TurnStarted(turn=1, prompt="p"))       # no exception
    assert sink.broken
    x.fail = False
    sink(ev.TurnStarted(turn=2, prompt="p"))
    assert x.got == []


def test_a_demo_session_exports_through_the_agents_hook(tmp_path):
    ws = make_workspace(tmp_path)
    with OtlpReceiver() as rx:
        cfg = load_config({"model": "demo"}, environ={**user_dirs(), "OTEL_EXPORTER_OTLP_ENDPOINT": rx.url},
                          workspace=ws)

        async def go():
            agent = build_agent(cfg)
            assert agent.telemetry is not None
            events = await collect(agent.run("what is in src?"))
            await agent.aclose()
            return agent, events
        agent, events = asyncio.run(go())
    finished = [e for e in events if isinstance(e, ev.TurnFinished)]
    assert finished and finished[-1].stop_reason == "end_turn"
    chats = [attrs(s.attributes) for _, s in rx.spans() if s.name == "chat demo"]
    calls = agent.cost.calls()
    assert len(chats) == calls >= 1
    assert {a["gen_ai.provider.name"] for a in chats} == {"ctxtui.demo"}
    out = sum(a["gen_ai.usage.output_tokens"] for a in chats)
    assert out == agent.cost.tokens()["output"] > 0


def test_a_collector_that_refuses_the_data_is_named_by_its_answer():
    with OtlpReceiver(status=400) as rx:
        x = OtelExporter(TelemetrySettings(rx.url), "s1")
        sink = TelemetrySink(TelemetrySettings(rx.url), x, Mapper("m", lambda *a: 0.5))
        sink(ev.TurnStarted(turn=1, prompt="p"))
        sink(ev.ModelCall(message_id="id", model="m", purpose="main", usage={"output_tokens": 3}))
        sink(ev.TurnFinished(stop_reason="end_turn", turns=1))
        line = sink.close()
    assert rx.paths and line is not None and "the collector answered HTTP 400" in line
    assert x.troubles.failed_batches >= 2 and x.troubles.dropped >= 2      # the spans and the metric points



def test_an_exporter_that_cannot_start_turns_telemetry_off_with_a_notice(tmp_path, monkeypatch):
    import agent_core.telemetry.sink as sink_module  # noqa: PLC0415  (the module the factory loads lazily)

    def refuse(*a, **k):
        raise ValueError("bad OTEL_ variable")
    monkeypatch.setattr(sink_module, "OtelExporter", refuse)
    cfg = load_config({"model": "demo"}, environ={**user_dirs(), "CTXTUI_OTEL_ENDPOINT": "http://127.0.0.1:9"},
                      workspace=make_workspace(tmp_path))
    agent = build_agent(cfg)
    assert agent.telemetry is None
    assert any(n.startswith("telemetry is off") and "ValueError" in n for n in agent.start_notices)
    asyncio.run(agent.aclose())


def test_what_the_cost_book_holds_at_exit_is_exported():
    x = _Exporter()
    book = {"m": {"usd_by_bucket": {"output": 0.5}}}
    sink = TelemetrySink(SETTINGS, x, Mapper("m", lambda *a: None), cost_now=lambda: ev.CostUpdate(  # type: ignore[arg-type]
        total_usd=0.5, by_model=book))
    sink.close()       # a summary call booked after the turn's last cost event (a failed main call)
    assert [(r.model, r.bucket, r.usd) for r in x.got] == [("m", "output", 0.5)] and x.closed
