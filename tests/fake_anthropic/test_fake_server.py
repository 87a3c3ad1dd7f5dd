"""The fake Messages API: wire format, validation, usage and cache simulation, faults, standalone mode."""
from __future__ import annotations

import http.client
import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import anthropic
import pytest
from hypothesis import given, settings

from compaction import project
from tests.fake_anthropic import (FakeAnthropic, PrefixCache, count_input, echo_responder, reply, thinking,
                                  tool_use)
from tests.fake_anthropic.sse import message_events

from tests.strategies import histories
from tests.hypothesis_budget import examples

MODEL = "claude-sonnet-5-5"
KEY = "sk-ant-test-fake-server-key"
TOOLS = [{"name": "bash", "description": "run a command",
          "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}]
EPH = {"type": "ephemeral"}


def post(fake: FakeAnthropic, path: str, body: dict, key: str | None = KEY) -> tuple[int, dict, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", fake.port, timeout=5)
    headers = {"content-type": "application/json"}
    if key:
        headers["x-api-key"] = key
    conn.request("POST", path, json.dumps(body), headers)
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data


def sse_events(data: bytes) -> list[tuple[str, dict]]:
    out = []
    for block in data.decode().split("\n\n"):
        if not block.strip():
            continue
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        out.append((lines["event"], json.loads(lines["data"])))
    return out


def body(messages=None, **kw) -> dict:
    b = {"model": MODEL, "max_tokens": 1000, "messages": messages or [{"role": "user", "content": "hi"}]}
    b.update(kw)
    return b


# ------------------------------------------------------------------ wire format

def test_stream_events_follow_the_api_sequence(fake_anthropic):
    fake_anthropic.push(reply(thinking("ponder"), "Hello world", tool_use("bash", {"command": "ls -la"}),
                              chunk=4))
    status, headers, data = post(fake_anthropic, "/v1/messages", body(stream=True, tools=TOOLS))
    assert status == 200 and headers["content-type"].startswith("text/event-stream")
    assert headers["request-id"].startswith("req_fake_")
    events = sse_events(data)
    names = [n for n, _ in events]
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    assert names.count("content_block_start") == names.count("content_block_stop") == 3
    start = events[0][1]["message"]
    assert start["role"] == "assistant" and start["model"] == MODEL and start["content"] == []
    u = start["usage"]
    for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens"):
        assert isinstance(u[k], int)
    assert set(u["cache_creation"]) == {"ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens"}
    deltas = [d["delta"] for n, d in events if n == "content_block_delta"]
    assert "".join(d["text"] for d in deltas if d["type"] == "text_delta") == "Hello world"
    assert "".join(d["thinking"] for d in deltas if d["type"] == "thinking_delta") == "ponder"
    assert any(d["type"] == "signature_delta" and d["signature"] for d in deltas)
    raw = "".join(d["partial_json"] for d in deltas if d["type"] == "input_json_delta")
    assert json.loads(raw) == {"command": "ls -la"}
    tool_start = [d["content_block"] for n, d in events if n == "content_block_start"][2]
    assert tool_start["type"] == "tool_use" and tool_start["id"].startswith("toolu_") and tool_start["input"] == {}
    md = events[-2][1]
    assert md["delta"]["stop_reason"] == "tool_use" and md["usage"]["output_tokens"] >= 1


def test_message_events_index_blocks_in_order():
    usage = {"input_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
             "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0}, "output_tokens": 2}
    ev = message_events(msg_id="m", model=MODEL, content=[{"type": "text", "text": "a"},
                                                          {"type": "tool_use", "id": "t", "name": "x", "input": {}}],
                        usage=usage, stop_reason="tool_use")
    idx = [d["index"] for n, d in ev if n.startswith("content_block")]
    assert idx == sorted(idx) and set(idx) == {0, 1}


async def test_non_streaming_create_through_the_sdk(fake_anthropic):
    fake_anthropic.push(reply("plain answer", tool_use("bash", {"command": "pwd"})))
    client = anthropic.AsyncAnthropic(api_key=KEY, base_url=fake_anthropic.base_url, max_retries=0)
    msg = await client.messages.create(model=MODEL, max_tokens=100, tools=TOOLS,
                                       messages=[{"role": "user", "content": "go"}])
    await client.close()
    assert msg.content[0].text == "plain answer"
    assert msg.content[1].name == "bash" and msg.content[1].input == {"command": "pwd"}
    assert msg.stop_reason == "tool_use"
    assert msg.usage.cache_creation is not None and msg.usage.input_tokens > 0


# ------------------------------------------------------------------ validation

@pytest.mark.parametrize("bad,needle", [
    (body(messages=[{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "nope", "content": "x"}]}]),
     "no matching tool_use"),
    (body(messages=[{"role": "user", "content": "a"},
                    {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "bash", "input": {}}]},
                    {"role": "user", "content": "no result"}]), "is not answered"),
    (body(messages=[{"role": "assistant", "content": "x"}]), "first message"),
    (body(messages=[{"role": "user", "content": []}]), "must not be empty"),
    ({"model": MODEL, "messages": [{"role": "user", "content": "x"}]}, "max_tokens: Field required"),
    (body(max_tokens=0), "greater than or equal to 1"),
    ({"max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}, "model: Field required"),
    (body(tools=[{"name": "bad name!", "input_schema": {"type": "object"}}]), "String should match pattern"),
    (body(tools=[{"name": "a", "input_schema": {"type": "array"}}]), "Input should be 'object'"),
    (body(tools=[TOOLS[0], TOOLS[0]]), "Tool names must be unique"),
    (body(temperatur=0.5), "Extra inputs are not permitted"),
    (body(system=[{"type": "text", "text": "  "}]), "must be non-empty"),
    (body(messages=[{"role": "user", "content": [{"type": "text", "text": str(i), "cache_control": EPH}
                                                 for i in range(5)]}]), "A maximum of 4 blocks with cache_control"),
])
def test_invalid_requests_get_400_and_keep_the_script(fake_anthropic, bad, needle):
    fake_anthropic.push(reply("unused"))
    status, _, data = post(fake_anthropic, "/v1/messages", bad)
    err = json.loads(data)
    assert status == 400 and err["type"] == "error"
    assert err["error"]["type"] == "invalid_request_error" and needle in err["error"]["message"]
    assert fake_anthropic.remaining == 1  # a rejected request consumes nothing


def test_unknown_model_and_max_output_limits():
    with FakeAnthropic([reply("x")], models={MODEL}, max_output=500) as fake:
        status, _, data = post(fake, "/v1/messages", body(model="claude-nope"))
        assert status == 404 and json.loads(data)["error"]["type"] == "not_found_error"
        status, _, data = post(fake, "/v1/messages", body(max_tokens=501))
        assert status == 400 and "maximum allowed number of output tokens" in data.decode()


def test_tools_required_for_tool_blocks_is_opt_in():
    msgs = [{"role": "user", "content": "a"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "bash", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}]
    with FakeAnthropic([reply("x")], require_tools_for_tool_blocks=True) as fake:
        status, _, data = post(fake, "/v1/messages", body(messages=msgs))
        assert status == 400 and "must define tools" in data.decode()
        assert post(fake, "/v1/messages", body(messages=msgs, tools=TOOLS))[0] == 200


def test_auth_is_checked_and_keys_are_never_recorded():
    with FakeAnthropic([reply("x")], api_key=KEY) as fake:
        assert post(fake, "/v1/messages", body(), key=None)[0] == 401
        status, _, data = post(fake, "/v1/messages", body(), key="sk-wrong")
        assert status == 401 and json.loads(data)["error"]["type"] == "authentication_error"
        assert post(fake, "/v1/messages", body(), key=KEY)[0] == 200
        recs = fake.requests
    assert [r.status for r in recs] == [401, 401, 200]
    assert all(KEY not in json.dumps(r.to_dict()) and "sk-wrong" not in json.dumps(r.to_dict()) for r in recs)
    assert recs[2].headers["x-api-key"] == "<redacted>"


def test_unknown_path_is_404(fake_anthropic):
    assert post(fake_anthropic, "/v1/complete", body())[0] == 404


# ------------------------------------------------------------------ usage, cache, window

def test_count_tokens_endpoint_matches_the_estimate(fake_anthropic):
    small = body(tools=TOOLS, system="be brief")
    big = body(messages=[{"role": "user", "content": "word " * 400}], tools=TOOLS, system="be brief")
    for b in (small, big):
        b.pop("max_tokens")
        status, _, data = post(fake_anthropic, "/v1/messages/count_tokens", b)
        assert status == 200 and json.loads(data) == {"input_tokens": count_input(b)}
    assert count_input(big) > count_input(small) + 400
    assert fake_anthropic.remaining == 0 and all(r.served == "count_tokens" for r in fake_anthropic.requests)


def test_prefix_cache_reads_what_an_earlier_breakpoint_wrote():
    cache = PrefixCache()
    sys_ = [{"type": "text", "text": "system prompt " * 50, "cache_control": EPH}]
    m1 = [{"role": "user", "content": [{"type": "text", "text": "first question " * 20, "cache_control": EPH}]}]
    u1 = cache.account(body(messages=m1, system=sys_))
    assert u1.cache_read_input_tokens == 0 and u1.input_tokens == 0
    assert u1.cache_creation_input_tokens == u1.ephemeral_5m_input_tokens == count_input(body(messages=m1, system=sys_))
    m2 = [{"role": "user", "content": [{"type": "text", "text": "first question " * 20}]},
          {"role": "assistant", "content": [{"type": "text", "text": "answer " * 30}]},
          {"role": "user", "content": [{"type": "text", "text": "follow up", "cache_control": {"type": "ephemeral",
                                                                                              "ttl": "1h"}}]}]
    u2 = cache.account(body(messages=m2, system=sys_))
    assert u2.cache_read_input_tokens == u1.cache_creation_input_tokens
    assert u2.cache_creation_input_tokens == u2.ephemeral_1h_input_tokens > 0 and u2.ephemeral_5m_input_tokens == 0
    # Without any breakpoint nothing is cached: all plain input.
    plain = [{**m, "content": [{"type": "text", "text": m["content"][0]["text"]}]} for m in m2]
    u3 = cache.account(body(messages=plain))
    assert (u3.cache_read_input_tokens, u3.cache_creation_input_tokens) == (0, 0)
    assert u3.input_tokens == count_input(body(messages=plain))
    # A changed prefix misses.
    m4 = [{"role": "user", "content": [{"type": "text", "text": "other", "cache_control": EPH}]}]
    u4 = cache.account(body(messages=m4, system=sys_))
    assert u4.cache_read_input_tokens == count_input({"model": MODEL, "system": sys_, "messages": []})
    assert u4.cache_creation_input_tokens == count_input({"messages": m4})


@settings(max_examples=examples(40), deadline=None)
@given(histories(max_rounds=8))
def test_cache_accounting_is_conserved(entries):
    msgs = project(entries)
    last = msgs[-1]
    msgs = [*msgs[:-1], {**last, "content": [*last["content"][:-1], {**last["content"][-1], "cache_control": EPH}]}]
    b = body(messages=msgs, tools=TOOLS)
    cache = PrefixCache()
    first, again = cache.account(b), cache.account(b)
    assert first.total == again.total == count_input(b)
    assert first.cache_read_input_tokens == 0
    assert again.cache_read_input_tokens == first.cache_creation_input_tokens and again.cache_creation_input_tokens == 0


def test_window_gives_prompt_too_long_without_consuming_the_script():
    with FakeAnthropic([reply("x")], context_window=50) as fake:
        b = body(messages=[{"role": "user", "content": "y" * 1000}])
        status, _, data = post(fake, "/v1/messages", b)
        assert status == 400
        assert json.loads(data)["error"]["message"] == f"prompt is too long: {count_input(b)} tokens > 50 maximum"
        assert fake.remaining == 1
        assert post(fake, "/v1/messages", body(max_tokens=20))[0] == 200


def test_input_plus_max_tokens_over_the_window_is_refused_like_the_api():
    with FakeAnthropic([reply("x")], context_window=50) as fake:
        b = body(max_tokens=1000)
        status, _, data = post(fake, "/v1/messages", b)
        assert status == 400 and fake.requests[-1].served == "max_tokens_over_window"
        assert json.loads(data)["error"]["message"] == (
            f"input length and `max_tokens` exceed context limit: {count_input(b)} + 1000 > 50, decrease input "
            "length or `max_tokens` and try again")
        assert fake.remaining == 1
        assert post(fake, "/v1/messages", body(max_tokens=50 - count_input(b)))[0] == 200


# ------------------------------------------------------------------ script, responder, faults

def test_responder_answers_when_the_script_is_empty_and_exhaustion_is_clear():
    with FakeAnthropic([reply("scripted")], responder=echo_responder) as fake:
        first = json.loads(post(fake, "/v1/messages", body())[2])
        second = json.loads(post(fake, "/v1/messages", body(messages=[{"role": "user", "content": "ping me"}]))[2])
        summary = json.loads(post(fake, "/v1/messages",
                                  body(messages=[{"role": "user", "content": "Write a summary"}]))[2])
    assert first["content"][0]["text"] == "scripted"
    assert second["content"][0]["text"] == "ok: ping me"
    assert "<summary>" in summary["content"][0]["text"] and "9. " in summary["content"][0]["text"]
    with FakeAnthropic() as fake:
        status, _, data = post(fake, "/v1/messages", body())
        assert status == 400 and "script is empty" in data.decode()


@pytest.mark.parametrize("item,status,etype", [
    ({"fault": "rate_limit", "retry_after": 0.25}, 429, "rate_limit_error"),
    ({"fault": "overloaded", "retry_after": 0.25}, 529, "overloaded_error"),
    ({"fault": "server_error"}, 500, "api_error"),
    ({"fault": "auth"}, 401, "authentication_error"),
    ({"fault": "prompt_too_long", "tokens": 300, "maximum": 200}, 400, "invalid_request_error"),
])
def test_status_faults(fake_anthropic, item, status, etype):
    fake_anthropic.push(item)
    got, headers, data = post(fake_anthropic, "/v1/messages", body())
    assert got == status and json.loads(data)["error"]["type"] == etype
    if status in (429, 529):
        assert headers["retry-after"] == "0.25"
    if etype == "invalid_request_error":
        assert json.loads(data)["error"]["message"] == "prompt is too long: 300 tokens > 200 maximum"


def test_cut_stream_ends_without_the_final_chunk(fake_anthropic):
    fake_anthropic.push({"fault": "cut", "after_events": 4})
    conn = http.client.HTTPConnection("127.0.0.1", fake_anthropic.port, timeout=5)
    conn.request("POST", "/v1/messages", json.dumps(body(stream=True)), {"x-api-key": KEY})
    resp = conn.getresponse()
    with pytest.raises(http.client.IncompleteRead) as e:
        resp.read()
    assert e.value.partial.count(b"event: ") == 4


def test_stop_interrupts_a_slow_stream():
    fake = FakeAnthropic([reply("slow " * 50, chunk=1, delay=0.2)]).start()
    conn = http.client.HTTPConnection("127.0.0.1", fake.port, timeout=5)
    conn.request("POST", "/v1/messages", json.dumps(body(stream=True)), {"x-api-key": KEY})
    resp = conn.getresponse()
    assert resp.status == 200
    fake.stop()  # returns promptly even though ~250 events at 0.2 s each remain
    with pytest.raises((http.client.IncompleteRead, ConnectionError, OSError)):
        resp.read()


# ------------------------------------------------------------------ standalone

def test_standalone_server_runs_a_script_file(tmp_path: Path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"script": [{"content": [{"type": "text", "text": "from file"}]}],
                                  "context_window": 100000}))
    record = tmp_path / "requests.jsonl"
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen([sys.executable, "-m", "tests.fake_anthropic", "--script", str(script),
                             "--record", str(record)], cwd=root, stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline().strip()
        assert line.startswith("FAKE_ANTHROPIC_URL=http://127.0.0.1:")
        client = anthropic.Anthropic(api_key=KEY, base_url=line.split("=", 1)[1], max_retries=0)
        with client.messages.stream(model=MODEL, max_tokens=100, messages=[{"role": "user", "content": "hi"}]) as s:
            assert s.get_final_text() == "from file"
        echoed = client.messages.create(model=MODEL, max_tokens=100, messages=[{"role": "user", "content": "again"}])
        assert echoed.content[0].text == "ok: again"  # the echo responder after the script
        client.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
    lines = [json.loads(x) for x in record.read_text().splitlines()]
    assert [x["served"] for x in lines] == ["reply", "reply"] and lines[0]["body"]["stream"] is True
    assert stat.S_IMODE(os.stat(record).st_mode) == 0o600
    assert KEY not in record.read_text()


# ------------------------------------------------------------------ compaction's documented limits

def _compact_request(fake: FakeAnthropic, model: str, trigger: int | None) -> tuple[int, dict]:
    edit: dict = {"type": "compact_20260112"}
    if trigger is not None:
        edit["trigger"] = {"type": "input_tokens", "value": trigger}
    conn = http.client.HTTPConnection("127.0.0.1", fake.port, timeout=5)
    conn.request("POST", "/v1/messages", json.dumps(body(model=model, context_management={"edits": [edit]})),
                 {"content-type": "application/json", "x-api-key": KEY, "anthropic-beta": "compact-2026-01-12"})
    resp = conn.getresponse()
    data = json.loads(resp.read())
    conn.close()
    return resp.status, data


def test_compaction_below_the_documented_minimum_trigger_is_refused():
    """Issue 24: a 20,000 window's threshold (16,700) was sent as the trigger; the API takes 50,000 at least."""
    with FakeAnthropic([reply("ok"), reply("ok"), reply("ok")]) as fake:
        status, data = _compact_request(fake, "claude-sonnet-4-6", 16_700)
        assert status == 400 and data["error"]["type"] == "invalid_request_error"
        assert "trigger" in data["error"]["message"] and "50000" in data["error"]["message"]
        assert "16700" in data["error"]["message"]
        assert _compact_request(fake, "claude-sonnet-4-6", 49_999)[0] == 400
        assert _compact_request(fake, "claude-sonnet-4-6", 50_000)[0] == 200
        assert _compact_request(fake, "claude-opus-4-6-20260205", None)[0] == 200   # a dated id; the default trigger
        assert fake.remaining == 1


def test_compaction_for_a_model_the_documentation_does_not_list_is_refused():
    with FakeAnthropic([reply("ok")]) as fake:
        for model in ("claude-sonnet-4-5", "claude-sonnet-4-5-20250929", "claude-haiku-4-5", "claude-sonnet-4-6x"):
            status, data = _compact_request(fake, model, 100_000)
            assert status == 400 and data["error"]["type"] == "invalid_request_error", model
            assert "compact_20260112" in data["error"]["message"] and model in data["error"]["message"]
        assert fake.remaining == 1
