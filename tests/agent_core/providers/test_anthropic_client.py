"""AnthropicClient through the real `anthropic` SDK against the loopback fake API."""
from __future__ import annotations

import copy
import json
import socket

import anthropic
import pytest
from hypothesis import given, settings

from agent_core.providers.anthropic_client import AnthropicClient, block_to_dict, usage_to_dict, with_cache_breakpoints
from agent_core.providers.errors import classify, display_url, parse_prompt_too_long, redact, retry_after_seconds
from agent_core.events import TextDelta, ThinkingDelta
from agent_core.providers.model import ModelError, ModelResponse
from agent_core.providers.models_info import DEFAULT_CONTEXT_WINDOW, DEFAULT_MAX_OUTPUT, model_limits
from compaction import project, validate_history
from tests.fake_anthropic import (FakeAnthropic, count_input, cut, fault, malformed, overloaded, prompt_too_long,
                                  rate_limit, reply, server_error, thinking, tool_use)
from tests.fake_anthropic.validation import validate_request

from tests.strategies import histories
from tests.hypothesis_budget import examples

MODEL = "claude-sonnet-5-5"
KEY = "sk-ant-api03-SECRET-test-key-value-0123456789"
SYSTEM = "You are a careful coding agent. " * 10
TOOLS = [{"name": "bash", "description": "Run a shell command.",
          "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}},
         {"name": "read_file", "description": "Read a file.",
          "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}]
USER = [{"role": "user", "content": [{"type": "text", "text": "List the files, then read README.md."}]}]


def make(fake: FakeAnthropic, **kw) -> AnthropicClient:
    kw.setdefault("max_retries", 2)
    return AnthropicClient(api_key=KEY, base_url=fake.base_url, model=MODEL, idle_timeout=10, **kw)


async def run(client: AnthropicClient, messages=USER, tools=TOOLS, system=SYSTEM, max_tokens=2000):
    items = [x async for x in client.stream(system=system, messages=messages, tools=tools, max_tokens=max_tokens)]
    assert isinstance(items[-1], ModelResponse) and not any(isinstance(x, ModelResponse) for x in items[:-1])
    return items[:-1], items[-1]


async def fails(client: AnthropicClient, messages=USER, **kw) -> tuple[ModelError, list]:
    seen: list = []
    with pytest.raises(ModelError) as e:
        async for x in client.stream(system=SYSTEM, messages=messages, tools=TOOLS, max_tokens=2000, **kw):
            seen.append(x)
    err = e.value
    assert KEY not in err.message and KEY not in str(err) and KEY not in repr(err.args)
    return err, seen


# ------------------------------------------------------------------ streaming

async def test_streams_text_deltas_then_one_response(fake_anthropic):
    fake_anthropic.push(reply("The quick brown fox jumps over the lazy dog.", chunk=5))
    client = make(fake_anthropic)
    deltas, resp = await run(client)
    await client.aclose()
    assert len(deltas) > 3 and all(isinstance(d, TextDelta) for d in deltas)
    assert "".join(d.text for d in deltas) == "The quick brown fox jumps over the lazy dog."
    assert resp.content == [{"type": "text", "text": "The quick brown fox jumps over the lazy dog."}]
    assert resp.stop_reason == "end_turn" and resp.model == MODEL and resp.id.startswith("msg_")


async def test_thinking_streams_before_text_and_keeps_its_signature(fake_anthropic):
    fake_anthropic.push(reply(thinking("First I should look around.", signature="sig-abc"), "Looking now.", chunk=6))
    client = make(fake_anthropic)
    deltas, resp = await run(client)
    await client.aclose()
    kinds = [type(d) for d in deltas]
    assert ThinkingDelta in kinds and kinds.index(ThinkingDelta) < kinds.index(TextDelta)
    assert "".join(d.text for d in deltas if isinstance(d, ThinkingDelta)) == "First I should look around."
    assert resp.content[0] == {"type": "thinking", "thinking": "First I should look around.", "signature": "sig-abc"}


async def test_parallel_tool_calls_and_a_second_turn(fake_anthropic):
    nested = {"path": "README.md", "opts": {"lines": [1, 2, 3], "note": "quote \" and unicode é"}}
    fake_anthropic.push(reply("Two things at once.", tool_use("bash", {"command": "ls -la"}),
                              tool_use("read_file", nested), chunk=3),
                        reply("README says hello."))
    client = make(fake_anthropic)
    _, first = await run(client)
    uses = [b for b in first.content if b["type"] == "tool_use"]
    assert first.stop_reason == "tool_use" and [u["name"] for u in uses] == ["bash", "read_file"]
    assert uses[0]["input"] == {"command": "ls -la"} and uses[1]["input"] == nested
    assert uses[0]["id"] != uses[1]["id"]
    # The response content goes back verbatim; the fake validates the history like the API.
    history = [*USER, {"role": "assistant", "content": first.content},
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": u["id"], "content": "ok"}
                                            for u in uses]}]
    _, second = await run(client, messages=history)
    await client.aclose()
    assert second.content[0]["text"] == "README says hello."
    assert [r.status for r in fake_anthropic.requests] == [200, 200]


async def test_usage_reports_cache_writes_then_reads(fake_anthropic):
    fake_anthropic.push(reply("a", tool_use("bash", {"command": "ls"})), reply("b"))
    client = make(fake_anthropic)
    _, first = await run(client)
    history = [*USER, {"role": "assistant", "content": first.content},
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": first.content[1]["id"],
                                             "content": "README.md\nsrc\n"}]}]
    _, second = await run(client, messages=history)
    await client.aclose()
    keys = {"input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "cache_creation"}
    assert keys <= set(first.usage) and keys <= set(second.usage)
    assert first.usage["cache_read_input_tokens"] == 0 and first.usage["cache_creation_input_tokens"] > 0
    assert first.usage["cache_creation"]["ephemeral_5m_input_tokens"] == first.usage["cache_creation_input_tokens"]
    assert second.usage["cache_read_input_tokens"] == first.usage["cache_creation_input_tokens"]
    assert second.usage["cache_creation_input_tokens"] > 0
    for resp, sent in zip((first, second), fake_anthropic.message_requests):
        u = resp.usage
        assert u["input_tokens"] + u["cache_creation_input_tokens"] + u["cache_read_input_tokens"] == count_input(sent)
        assert u["output_tokens"] >= 1


async def test_cache_breakpoints_are_sent_without_touching_the_callers_dicts(fake_anthropic):
    fake_anthropic.push(reply("ok"))
    messages = [*USER, {"role": "assistant", "content": [{"type": "text", "text": "Sure."}]},
                {"role": "user", "content": "plain string content"}]
    before_m, before_t = copy.deepcopy(messages), copy.deepcopy(TOOLS)
    client = make(fake_anthropic)
    await run(client, messages=messages)
    await client.aclose()
    assert messages == before_m and TOOLS == before_t
    sent = fake_anthropic.message_requests[0]
    assert sent["stream"] is True
    assert sent["system"] == [{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}]
    assert sent["tools"][-1]["cache_control"] == {"type": "ephemeral"} and "cache_control" not in sent["tools"][0]
    assert sent["messages"][-1]["content"] == [{"type": "text", "text": "plain string content",
                                                "cache_control": {"type": "ephemeral"}}]
    assert "cache_control" not in json.dumps(sent["messages"][:-1])


@settings(max_examples=examples(60), deadline=None)
@given(histories(max_rounds=10))
def test_breakpoints_never_mutate_and_stay_within_the_api_limit(entries):
    msgs = project(entries)
    snapshot = copy.deepcopy(msgs)
    system, out, tools = with_cache_breakpoints(SYSTEM, msgs, TOOLS)
    assert msgs == snapshot
    assert validate_history(out) == []
    body = {"model": MODEL, "max_tokens": 100, "messages": out, "system": system, "tools": tools}
    validate_request(body)  # raises on more than four breakpoints or a malformed part
    last = out[-1]["content"]
    assert any("cache_control" in b for b in last if b.get("type") not in ("thinking", "redacted_thinking"))


def test_breakpoints_respect_markers_already_present():
    marked = [{"role": "user", "content": [{"type": "text", "text": f"p{i}", "cache_control": {"type": "ephemeral"}}
                                           for i in range(3)]},
              {"role": "assistant", "content": "a"}, {"role": "user", "content": "q"}]
    system, out, tools = with_cache_breakpoints(SYSTEM, marked, TOOLS)
    body = {"model": MODEL, "max_tokens": 100, "messages": out, "system": system, "tools": tools}
    validate_request(body)
    assert "cache_control" in out[-1]["content"][-1]          # the latest message wins the last slot
    assert "cache_control" not in system[-1] and "cache_control" not in tools[-1]
    assert with_cache_breakpoints("", [{"role": "user", "content": "x"}], [])[0] is None


async def test_count_tokens_via_the_api(fake_anthropic):
    client = make(fake_anthropic)
    n = await client.count_tokens(system=SYSTEM, messages=USER, tools=TOOLS)
    await client.aclose()
    assert n == count_input({"system": SYSTEM, "messages": USER, "tools": TOOLS}) and n > 0
    assert fake_anthropic.requests[0].path == "/v1/messages/count_tokens"


async def test_count_tokens_failure_is_none_with_a_reason():
    with FakeAnthropic(api_key="the-right-key") as fake:
        client = make(fake)
        assert await client.count_tokens(system=SYSTEM, messages=USER, tools=TOOLS) is None
        await client.aclose()
    assert client.last_count_error.kind == "auth" and KEY not in client.last_count_error.message


async def test_cancelling_mid_stream_leaves_the_client_usable(fake_anthropic):
    fake_anthropic.push(reply("slow " * 40, chunk=2, delay=0.02), reply("next"))
    client = make(fake_anthropic)
    gen = client.stream(system=SYSTEM, messages=USER, tools=TOOLS, max_tokens=100)
    first = await gen.__anext__()
    await gen.aclose()
    assert isinstance(first, TextDelta)
    _, resp = await run(client)
    await client.aclose()
    assert resp.content[0]["text"] == "next"


# ------------------------------------------------------------------ errors and retries

async def test_invariant_violation_is_a_bad_request_without_retry(fake_anthropic):
    fake_anthropic.push(reply("never"))
    broken = [*USER, {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_x", "name": "bash",
                                                         "input": {"command": "ls"}}]},
              {"role": "user", "content": [{"type": "text", "text": "forgot the result"}]}]
    client = make(fake_anthropic)
    err, _ = await fails(client, messages=broken)
    await client.aclose()
    assert err.kind == "bad_request" and err.status == 400 and not err.retryable
    assert "toolu_x" in err.message and "is not answered" in err.message
    assert len(fake_anthropic.requests) == 1 and fake_anthropic.remaining == 1


@pytest.mark.parametrize("item", [rate_limit(0.01), overloaded(0.01), server_error(retry_after=0.01)],
                         ids=["429", "529", "500"])
async def test_sdk_retries_honour_retry_after_then_succeed(fake_anthropic, item):
    fake_anthropic.push(item, reply("recovered"))
    client = make(fake_anthropic)
    _, resp = await run(client)
    await client.aclose()
    assert resp.content[0]["text"] == "recovered"
    reqs = fake_anthropic.requests
    assert [r.served for r in reqs] == [item["fault"], "reply"]
    assert [r.headers.get("x-stainless-retry-count") for r in reqs] == ["0", "1"]  # the SDK retried, not us
    assert reqs[0].body == reqs[1].body


@pytest.mark.parametrize("item,kind,status", [
    (rate_limit(0.01), "rate_limit", 429),
    (overloaded(0.01), "overloaded", 529),
    (server_error(retry_after=0.01), "server", 500),
], ids=["429", "529", "500"])
async def test_exhausted_retries_become_classified_errors(fake_anthropic, item, kind, status):
    fake_anthropic.push(item, item)
    client = make(fake_anthropic, max_retries=1)
    err, _ = await fails(client)
    await client.aclose()
    assert (err.kind, err.status, err.retryable) == (kind, status, True)
    assert len(fake_anthropic.requests) == 2
    assert "retried 1 time" in err.message and "try again" in err.message.lower()
    if kind != "server":
        assert err.retry_after == pytest.approx(0.01)


async def test_prompt_too_long_from_the_window():
    with FakeAnthropic([reply("never")], context_window=120) as fake:
        client = make(fake)
        err, _ = await fails(client)
        await client.aclose()
        sent = fake.requests[0].body
    assert err.kind == "prompt_too_long" and err.status == 400 and not err.retryable
    assert parse_prompt_too_long(err.message) == (count_input(sent), 120)
    assert "/compact" in err.message


async def test_scripted_prompt_too_long(fake_anthropic):
    fake_anthropic.push(prompt_too_long(250_000, 200_000))
    client = make(fake_anthropic)
    err, _ = await fails(client)
    await client.aclose()
    assert err.kind == "prompt_too_long" and parse_prompt_too_long(err.message) == (250_000, 200_000)


async def test_stream_cut_mid_way_is_a_retryable_connection_error(fake_anthropic):
    fake_anthropic.push(cut(after_events=5, reply_item=reply("partial text that never finishes", chunk=4)))
    client = make(fake_anthropic)
    err, seen = await fails(client)
    await client.aclose()
    assert err.kind == "connection" and err.retryable
    assert seen and all(isinstance(x, TextDelta) for x in seen)  # what arrived was streamed, no response
    assert "Try again" in err.message and len(fake_anthropic.requests) == 1


async def test_stream_ending_before_message_stop_is_a_connection_error(fake_anthropic):
    fake_anthropic.push(fault("truncate", after_events=6, reply=reply("a clean end but no message_stop")))
    client = make(fake_anthropic)
    err, seen = await fails(client)
    await client.aclose()
    assert err.kind == "connection" and err.retryable and "closed before the answer was complete" in err.message
    assert seen


async def test_malformed_sse_is_a_retryable_server_error(fake_anthropic):
    fake_anthropic.push(malformed(after_events=3))
    client = make(fake_anthropic)
    err, _ = await fails(client)
    await client.aclose()
    assert err.kind == "server" and err.retryable and "malformed" in err.message


async def test_error_event_inside_the_stream(fake_anthropic):
    fake_anthropic.push(fault("stream_error", after_events=3, error_type="overloaded_error"))
    client = make(fake_anthropic)
    err, _ = await fails(client)
    await client.aclose()
    assert err.kind == "overloaded" and err.retryable and "retried" not in err.message


async def test_auth_error_names_the_variable_and_never_the_key():
    with FakeAnthropic([reply("x")], api_key="the-right-key") as fake:
        client = make(fake)
        err, _ = await fails(client)
        await client.aclose()
    assert err.kind == "auth" and err.status == 401 and not err.retryable
    assert "ANTHROPIC_API_KEY" in err.message


async def test_key_echoed_by_the_server_is_redacted(fake_anthropic):
    fake_anthropic.push(fault("bad_request", message=f"something about {KEY} went wrong"))
    client = make(fake_anthropic)
    err, _ = await fails(client)
    await client.aclose()
    assert err.kind == "bad_request" and "[REDACTED]" in err.message


async def test_unreachable_server_is_a_connection_error():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]          # bound but not listening: connection refused
        client = AnthropicClient(api_key=KEY, base_url=f"http://user:pw@127.0.0.1:{port}", model=MODEL,
                                 max_retries=0, connect_timeout=5)
        err, _ = await fails(client)
        await client.aclose()
    assert err.kind == "connection" and err.retryable and "ANTHROPIC_BASE_URL" in err.message
    assert f"127.0.0.1:{port}" in err.message and "pw" not in err.message


async def test_anthropic_base_url_from_the_environment(fake_anthropic, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_anthropic.base_url)
    fake_anthropic.push(reply("via env"))
    client = AnthropicClient(api_key=KEY, model=MODEL, max_retries=0, idle_timeout=10)
    _, resp = await run(client)
    await client.aclose()
    assert resp.content[0]["text"] == "via env" and KEY not in repr(client)


def test_missing_key_is_an_auth_error():
    with pytest.raises(ModelError) as e:
        AnthropicClient(api_key="", model=MODEL)
    assert e.value.kind == "auth" and "ANTHROPIC_API_KEY" in e.value.message


# ------------------------------------------------------------------ pure helpers

def test_model_limits_from_genai_prices_table_and_overrides():
    known = model_limits("claude-haiku-4-5")
    assert (known.context_window, known.window_source) == (200_000, "genai-prices")
    assert (known.max_output_tokens, known.output_source) == (64_000, "table")
    assert model_limits("claude-sonnet-5-5").context_window == 1_000_000       # a native 1M window
    # genai-prices lists Opus 4.6 at its opt-in 1M window; it is 200k unless that is on
    assert model_limits("claude-opus-4-6").context_window == 200_000
    assert model_limits("claude-3-5-haiku-latest").max_output_tokens == 8_192
    odd = model_limits("claude-nonexistent-9")
    assert (odd.context_window, odd.window_source) == (DEFAULT_CONTEXT_WINDOW, "table")
    assert (odd.max_output_tokens, odd.output_source) == (DEFAULT_MAX_OUTPUT, "default")
    assert model_limits("some-proxy-model").window_source == "default"
    over = model_limits("claude-sonnet-4-5", context_window=30_000, max_output_tokens=4_000)
    assert (over.context_window, over.max_output_tokens, over.window_source) == (30_000, 4_000, "override")


async def test_client_info_uses_the_limits(fake_anthropic):
    client = make(fake_anthropic, context_window=50_000, max_output_tokens=1_000)
    assert (client.info.provider, client.info.context_window, client.info.max_output_tokens) == \
        ("anthropic", 50_000, 1_000)
    await client.aclose()


def test_error_helpers():
    assert parse_prompt_too_long("prompt is too long: 210345 tokens > 200000 maximum") == (210345, 200000)
    assert parse_prompt_too_long("something else") is None
    assert redact(f"x {KEY} y", [KEY, None]) == "x [REDACTED] y"
    assert display_url("https://u:secret@proxy.example:8443/v1?token=abc") == "https://proxy.example:8443/v1"
    assert retry_after_seconds({"retry-after-ms": "250"}) == 0.25
    assert retry_after_seconds({"retry-after": "3"}) == 3.0
    assert retry_after_seconds({}) is None
    assert classify(ValueError("bad json")).kind == "server"
    assert classify(RuntimeError("order")).retryable



def _sdk_http():
    """The HTTP library the installed SDK sits on (httpx for 0.x, httpx2 for 2.x)."""
    return next(v for k, v in vars(anthropic._base_client).items() if k.startswith("httpx"))


def _sdk_connection_error(cause: BaseException) -> BaseException:
    """An SDK `APIConnectionError` raised from `cause`, as anthropic 2.x raises one for a stream
    broken mid-answer, so the wrapped case is tested whatever SDK version is installed."""
    request = _sdk_http().Request("POST", "http://127.0.0.1:9/v1/messages")
    try:
        try:
            raise cause
        except Exception as e:
            raise anthropic.APIConnectionError(request=request) from e
    except anthropic.APIConnectionError as wrapped:
        return wrapped


def test_a_wrapped_transport_error_is_a_cut_stream_only_once_the_answer_started():
    wrapped = _sdk_connection_error(_sdk_http().RemoteProtocolError("peer closed connection"))
    before = classify(wrapped, retries=2, started=False)
    after = classify(wrapped, retries=2, started=True)
    assert before.kind == after.kind == "connection" and before.retryable and after.retryable
    assert "retried 2 times" in before.message and before.already_retried
    assert "retried" not in after.message and "partial answer was discarded" in after.message
    assert not after.already_retried    # the loop may retry a stream the SDK never retried
    other = _sdk_connection_error(ValueError("not the HTTP layer"))
    assert "Could not connect" in classify(other, retries=2, started=True).message

def test_usage_and_block_conversion_defaults():
    u = usage_to_dict({"input_tokens": 5, "output_tokens": 2, "cache_creation_input_tokens": 7})
    assert u["cache_read_input_tokens"] == 0
    assert u["cache_creation"] == {"ephemeral_5m_input_tokens": 7, "ephemeral_1h_input_tokens": 0}
    msg = anthropic.types.Message.model_validate({
        "id": "m", "type": "message", "role": "assistant", "model": MODEL, "stop_reason": "end_turn",
        "content": [{"type": "text", "text": "hi", "citations": None},
                    {"type": "tool_use", "id": "t", "name": "bash", "input": {"a": 1}, "caller": {"type": "direct"}}],
        "usage": {"input_tokens": 1, "output_tokens": 1}})
    assert [block_to_dict(b) for b in msg.content] == [
        {"type": "text", "text": "hi"}, {"type": "tool_use", "id": "t", "name": "bash", "input": {"a": 1}}]
