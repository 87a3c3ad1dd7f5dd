"""Telemetry from a headless run (docs/telemetry.md): what a loopback OTLP/HTTP receiver decodes
matches the fake API's usage and the cost headless reports; a compaction is exported; a collector
that hangs or refuses never holds a turn up, and its header token never shows."""
from __future__ import annotations

import json
import time

import pytest

from agent_core.logs.discover import latest_session
from agent_core.telemetry.exporter import SHUTDOWN_S
from agent_core.sessions.paths import project_state_dir, state_root
from tests.agent_helpers import MODEL, SECRET, make_workspace, user_dirs
from tests.fake_anthropic import FakeAnthropic, reply
from tests.headless_helpers import compacting_session, run_headless
from tests.otlp_receiver import OtlpReceiver, SilentCollector, attrs, refused_url

TOKEN = "tok-0123456789abcdefSECRET"
USAGE = {"input_tokens": 120, "output_tokens": 45, "cache_read_input_tokens": 1_000,
         "cache_creation_input_tokens": 200,
         "cache_creation": {"ephemeral_5m_input_tokens": 200, "ephemeral_1h_input_tokens": 0}}


def _env(fake, endpoint: str | None) -> dict:
    env = {**user_dirs(), "ANTHROPIC_API_KEY": SECRET, "ANTHROPIC_BASE_URL": fake.base_url, "CTXTUI_MODEL": MODEL}
    if endpoint:
        env.update({"CTXTUI_OTEL_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_HEADERS": f"authorization=Bearer%20{TOKEN}",
                    "OTEL_SERVICE_NAME": "ctxtui-test"})
    return env


def _result(out: str) -> dict:
    return json.loads(out.splitlines()[-1])


def _sum(points) -> float:
    return sum(p.as_double or p.as_int for _, p in points)


def test_a_turn_exports_its_call_cost_and_context(tmp_path):
    ws = make_workspace(tmp_path)
    with OtlpReceiver() as rx, FakeAnthropic([reply("Hello.", usage=USAGE)]) as fake:
        code, out, err = run_headless(["-p", "hi", "--workspace", str(ws), "--output-format", "json"],
                                      _env(fake, rx.url))
    assert code == 0, err
    result = _result(out)
    assert {"/v1/traces", "/v1/metrics"} <= set(rx.paths)
    assert all(h.get("authorization") == f"Bearer {TOKEN}" for h in rx.headers)
    assert all(h.get("content-type") == "application/x-protobuf" for h in rx.headers)

    chats = [(res, s) for res, s in rx.spans() if s.name == f"chat {MODEL}"]
    assert len(chats) == 1
    resource, span = chats[0]
    assert resource["service.name"] == "ctxtui-test" and resource["session.id"] == result["session_id"]
    a = attrs(span.attributes)
    assert a["gen_ai.operation.name"] == "chat" and a["gen_ai.provider.name"] == "anthropic"
    assert a["gen_ai.request.model"] == MODEL and a["gen_ai.response.model"] == MODEL
    assert a["gen_ai.usage.output_tokens"] == 45
    assert a["gen_ai.usage.input_tokens"] == 120 + 1_000 + 200      # cache reads and writes included
    assert a["gen_ai.usage.cache_read.input_tokens"] == 1_000
    assert a["gen_ai.usage.cache_creation.input_tokens"] == 200
    assert a["ctxtui.purpose"] == "main" and a["ctxtui.cost_usd"] == pytest.approx(result["total_usd"])
    turn = [s for _, s in rx.spans() if s.name == "invoke_agent ctxtui"]
    assert len(turn) == 1 and span.parent_span_id == turn[0].span_id

    tokens = {(p[0]["type"], p[0]["model"]): p[1].as_int for p in rx.points("ctxtui.token.usage")}
    assert tokens == {("input", MODEL): 120, ("output", MODEL): 45, ("cache_read", MODEL): 1_000,
                      ("cache_write_5m", MODEL): 200}
    cost = {p[0]["type"]: p[1].as_double for p in rx.points("ctxtui.cost.usage")}
    assert sum(cost.values()) == pytest.approx(result["total_usd"]) and result["total_usd"] > 0
    split = result["cost"]["by_model"][MODEL]["usd_by_bucket"]
    assert cost == pytest.approx({k: v for k, v in split.items() if v})
    [(ctx_attrs, ctx)] = rx.points("ctxtui.context.tokens")
    assert ctx.as_int == result["context"]["tokens"] and ctx_attrs == {"model": MODEL}
    assert rx.points("ctxtui.context.window")[0][1].as_int == result["context"]["window"]

    log = latest_session(project_state_dir(state_root(user_dirs()), ws)).path.read_text()
    assert TOKEN not in out + err + log and "OTEL_EXPORTER_OTLP_HEADERS" not in log


@pytest.mark.slow
def test_a_compaction_is_exported(tmp_path):
    ws = make_workspace(tmp_path)
    responder = compacting_session(ws)

    with OtlpReceiver() as rx, FakeAnthropic(responder=responder) as fake:
        code, out, err = run_headless(["-p", "read it all", "--workspace", str(ws), "--allow", "bash",
                                       "--context-window", "12000", "--output-format", "stream-json"],
                                      _env(fake, rx.url))
    assert code == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    shown = [(d["layer"], d["trigger"], d["tokens_before"], d["tokens_after"]) for d in lines
             if d["type"] == "compaction"]
    assert shown
    spans = [attrs(s.attributes) for _, s in rx.spans() if s.name.startswith("compaction ")]
    exported = [(a["ctxtui.compaction.layer"], a["ctxtui.compaction.trigger"], a["ctxtui.compaction.tokens_before"],
                 a["ctxtui.compaction.tokens_after"]) for a in spans]
    assert sorted(exported) == sorted(shown)
    counted = {(p[0]["layer"], p[0]["trigger"]): p[1].as_int for p in rx.points("ctxtui.compaction.count")}
    assert sum(counted.values()) == len(shown)
    assert set(counted) == {(layer, trigger) for layer, trigger, _, _ in shown}
    removed = sum(p[1].as_int for p in rx.points("ctxtui.compaction.tokens_removed"))
    assert removed == sum(b - a for _, _, b, a in shown if b > a)
    result = lines[-1]
    assert _sum(rx.points("ctxtui.cost.usage")) == pytest.approx(result["total_usd"])
    calls_exported = [s for _, s in rx.spans() if s.name.startswith("chat ")]
    assert len(calls_exported) == len(fake.message_requests)     # summary calls included


def _timed(env, ws) -> tuple[float, int, str]:
    start = time.monotonic()
    code, _, err = run_headless(["-p", "hi", "--workspace", str(ws), "--output-format", "json"], env)
    return time.monotonic() - start, code, err


@pytest.mark.parametrize("collector", ["silent", "refused"])
@pytest.mark.slow
def test_a_dead_collector_never_holds_a_turn_up(tmp_path, capsys, collector):
    ws = make_workspace(tmp_path)
    with FakeAnthropic(responder=lambda body: reply("Hello.")) as fake:
        baseline, code, _ = _timed(_env(fake, None), ws)
        assert code == 0
        if collector == "silent":
            with SilentCollector() as dead:
                took, code, err = _timed(_env(fake, dead.url), ws)
        else:
            took, code, err = _timed(_env(fake, refused_url()), ws)
    assert code == 0, err
    # the turn is not slowed; exit waits for the last export at most SHUTDOWN_S
    assert took < baseline + SHUTDOWN_S + 1.0, (took, baseline)
    said = capsys.readouterr().err + err        # at exit (stderr), or as a notice in the turn ([note])
    assert TOKEN not in said
    warnings = [line for line in said.splitlines() if "telemetry: could not export" in line]
    assert len(warnings) <= 1
    if collector == "refused":                  # refused at once: known before the exit's flush ends
        assert len(warnings) == 1 and "127.0.0.1" in warnings[0] and "session goes on" in warnings[0]
