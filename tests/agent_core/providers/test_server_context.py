"""Server-side context management (issue 16): the plan each request carries, reading what the server
did, and the client's request and answer through the real SDK against the fake server."""
from __future__ import annotations

import pytest

from compaction import validate_history
from agent_core import events as ev
from agent_core.providers.anthropic_client import AnthropicClient
from agent_core.providers.model import ModelError, ModelResponse
from agent_core.providers.server_context import (COMPACT_BETA, COMPACT_TRIGGER_MIN, CONTEXT_MANAGEMENT_BETA,
                                                 ServerPlan, compacts, compaction_refusal, plan_for, read_outcome)
from tests.agent_helpers import MODEL
from tests.fake_anthropic import FakeAnthropic, reply

KEY = "sk-ant-test-key"


def _plan(**kw) -> ServerPlan:
    """The API's smallest compaction trigger (50,000), on a model its documentation lists (MODEL)."""
    return ServerPlan("server", **{"compact_trigger": 50_000, "clear_trigger": 40_000, **kw})


def _client(base_url: str, **kw) -> AnthropicClient:
    return AnthropicClient(api_key=KEY, base_url=base_url, model=MODEL, **kw)


def test_plan_from_our_thresholds():
    plan = plan_for("server", compact_trigger=167_000, window=200_000, micro_trigger_ratio=0.5, keep_recent=5,
                    clear_at_least_ratio=0.05, tool_names=["bash", "read_file", "compact"],
                    compactable=frozenset({"bash", "read_file"}), preserved=frozenset({"read_file"}))
    assert plan.betas() == [CONTEXT_MANAGEMENT_BETA, COMPACT_BETA]
    clear, compact = plan.edits()
    assert clear == {"type": "clear_tool_uses_20250919", "trigger": {"type": "input_tokens", "value": 100_000},
                     "keep": {"type": "tool_uses", "value": 5},
                     "clear_at_least": {"type": "input_tokens", "value": 10_000},
                     "exclude_tools": ["compact", "read_file"]}
    assert compact == {"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 167_000}}
    hybrid = plan_for("hybrid", compact_trigger=50_000, window=200_000, micro_trigger_ratio=0.5, keep_recent=5,
                      clear_at_least_ratio=0.05, tool_names=[], compactable=frozenset())
    assert hybrid.betas() == [COMPACT_BETA] and [e["type"] for e in hybrid.edits()] == ["compact_20260112"]
    assert plan_for("local", compact_trigger=1, window=2, micro_trigger_ratio=0.5, keep_recent=1,
                    clear_at_least_ratio=0.1, tool_names=[], compactable=frozenset()) is None
    with pytest.raises(ValueError):
        ServerPlan("local", compact_trigger=1)


def test_read_outcome_of_edits_compaction_and_iterations():
    content = [{"type": "compaction", "content": "the summary", "encrypted_content": "x"},
               {"type": "text", "text": "hi"}]
    server = {"context_management": {"applied_edits": [
        {"type": "clear_tool_uses_20250919", "cleared_input_tokens": 1200, "cleared_tool_uses": 3},
        {"type": "clear_thinking_20251015", "cleared_input_tokens": 50, "cleared_thinking_turns": 1}]},
        "iterations": [{"type": "compaction", "input_tokens": 900, "output_tokens": 40,
                        "cache_creation_input_tokens": 0, "cache_read_input_tokens": 100},
                       {"type": "message", "input_tokens": 70, "output_tokens": 5,
                        "cache_creation_input_tokens": 10, "cache_read_input_tokens": 0}]}
    out = read_outcome(content, server)
    assert [(c.layer, c.cleared_tokens, c.cleared) for c in out.clears] == [
        ("server_clear_tool_uses", 1200, 3), ("server_clear_thinking", 50, 1)]
    assert out.compacted and out.compaction_index == 0 and out.summary == "the summary"
    assert out.compaction_usage["input_tokens"] == 900 and out.compaction_usage["cache_read_input_tokens"] == 100
    assert out.message_usage["output_tokens"] == 5
    failed = read_outcome([{"type": "compaction", "content": None}], None)
    assert failed.compaction_failed and not failed.compacted and failed.acted
    assert not read_outcome([{"type": "text", "text": "x"}], {"context_management": {"applied_edits": []}}).acted


async def _answer(client: AnthropicClient, messages: list[dict]) -> tuple[ModelResponse, list]:
    items = [i async for i in client.stream(system="You help.", messages=messages, tools=[], max_tokens=200)]
    assert isinstance(items[-1], ModelResponse)
    return items[-1], items[:-1]


async def test_request_carries_betas_and_edits_and_the_block_goes_back_verbatim():
    long_prompt = [{"role": "user", "content": [{"type": "text", "text": "please look at this " * 12_000}]}]  # 60k
    with FakeAnthropic([reply("first"), reply("second")]) as fake:
        client = _client(fake.base_url, server=_plan())
        response, streamed = await _answer(client, long_prompt)
        first = fake.requests[0]
        assert first.headers["anthropic-beta"] == f"{CONTEXT_MANAGEMENT_BETA},{COMPACT_BETA}"
        assert first.body["context_management"] == _plan().context_management()
        block = fake.requests[0].compaction
        assert block is not None and block["content"] and block["encrypted_content"] and block["signature"]
        assert response.content[0] == block and response.content[1] == {"type": "text", "text": "first"}
        assert [type(i) for i in streamed if not isinstance(i, ev.TextDelta)] == [
            ev.CompactionStarted, ev.CompactionDelta, ev.CompactionEnded]
        assert response.server["iterations"][0]["type"] == "compaction"
        follow = [{"role": "assistant", "content": response.content},
                  {"role": "user", "content": [{"type": "text", "text": "go on"}]}]
        assert validate_history(follow) == []
        await _answer(client, follow)
        sent = fake.message_requests[1]["messages"][0]["content"][0]
        assert sent == block                         # every field as the API returned it, no cache_control
        await client.aclose()


async def test_local_client_sends_no_beta():
    with FakeAnthropic([reply("plain")]) as fake:
        client = AnthropicClient(api_key=KEY, base_url=fake.base_url)
        response, _ = await _answer(client, [{"role": "user", "content": "hi"}])
        assert "anthropic-beta" not in fake.requests[0].headers
        assert "context_management" not in fake.requests[0].body and response.server is None
        await client.aclose()


async def test_failed_compaction_keeps_its_null_content():
    prompt = [{"role": "user", "content": [{"type": "text", "text": "words " * 40_000}]}]   # 60,000 tokens
    with FakeAnthropic([{**reply("answer"), "compaction_fails": True}]) as fake:
        client = _client(fake.base_url, server=_plan(clear_trigger=None))
        response, streamed = await _answer(client, prompt)
        assert response.content[0] == {"type": "compaction", "content": None, "encrypted_content": None}
        ended = [i for i in streamed if isinstance(i, ev.CompactionEnded)]
        assert ended and not ended[0].ok
        assert read_outcome(response.content, response.server).compaction_failed
        await client.aclose()


async def test_an_api_without_the_beta_gets_an_error_naming_the_setting():
    with FakeAnthropic([reply("never")], reject_betas={COMPACT_BETA}) as fake:
        client = _client(fake.base_url, server=_plan())
        with pytest.raises(ModelError) as err:
            await _answer(client, [{"role": "user", "content": "hi"}])
        assert "CTXTUI_ENGINE" in err.value.message and COMPACT_BETA in err.value.message
        assert err.value.kind == "bad_request" and not err.value.retryable
        await client.aclose()


async def test_the_fake_server_refuses_edits_without_their_beta():
    with FakeAnthropic([reply("never")]) as fake:
        client = _client(fake.base_url)
        params = client.request_params(system="s", messages=[{"role": "user", "content": "hi"}], tools=[],
                                       max_tokens=10)
        params["context_management"] = _plan().context_management()
        with pytest.raises(Exception) as err:
            await client._client.beta.messages.create(**params)
        assert "beta" in str(err.value)
        await client.aclose()


def test_validate_history_knows_the_compaction_block():
    block = {"type": "compaction", "content": "summary", "encrypted_content": "e", "signature": "s"}
    opening = {"role": "assistant", "content": [block, {"type": "text", "text": "done"}]}
    assert validate_history([opening, {"role": "user", "content": "next"}]) == []
    assert validate_history([{"role": "assistant", "content": [{"type": "text", "text": "hi"}]}])
    assert validate_history([{"role": "user", "content": [block]}])
    assert validate_history([{"role": "user", "content": "x"},
                             {"role": "assistant", "content": [{**block, "content": ""}]}])
    failed = {"type": "compaction", "content": None, "encrypted_content": None}
    assert validate_history([{"role": "user", "content": "x"}, {"role": "assistant", "content": [failed]}]) == []


def test_our_own_summary_call_is_never_compacted_by_the_server():
    msgs = [{"role": "user", "content": "hi"}]
    client = AnthropicClient(api_key=KEY, base_url="http://127.0.0.1:9", server=_plan())
    main = client.request_params(system="s", messages=msgs, tools=[], max_tokens=10)
    summary = client.request_params(system="s", messages=msgs, tools=[], max_tokens=10, purpose="compaction")
    assert [e["type"] for e in main["context_management"]["edits"]] == ["clear_tool_uses_20250919",
                                                                       "compact_20260112"]
    assert [e["type"] for e in summary["context_management"]["edits"]] == ["clear_tool_uses_20250919"]
    assert summary["betas"] == main["betas"]          # a compaction block in the history still needs its beta
    client.server = ServerPlan("hybrid", compact_trigger=100)
    hybrid = client.request_params(system="s", messages=msgs, tools=[], max_tokens=10, purpose="compaction")
    assert "context_management" not in hybrid and hybrid["betas"] == [COMPACT_BETA]


def test_compaction_is_asked_only_for_the_documented_models_and_trigger():
    """Issue 24: the compaction documentation lists Opus 4.7 and 4.6, Sonnet 4.6 and Mythos Preview
    (their dated ids too) and a trigger of 50,000 tokens at least."""
    assert COMPACT_TRIGGER_MIN == 50_000
    for model in ("claude-sonnet-4-6", "claude-opus-4-6", "claude-opus-4-7", "claude-mythos-preview",
                  "claude-opus-4-6-20260205", "claude-sonnet-4-6[1m]"):
        assert compacts(model), model
        assert compaction_refusal(model, 167_000, 200_000) is None
    for model in ("claude-sonnet-4-5", "claude-sonnet-4-5-20250929", "claude-haiku-4-5", "claude-opus-4-5",
                  "claude-sonnet-4-6-latest", "Claude-Sonnet-4-6", "claude-sonnet-5-5", "demo", ""):
        assert not compacts(model), model
    why = compaction_refusal("claude-sonnet-4-5", 167_000, 200_000)
    assert "'claude-sonnet-4-5' is not one of them" in why and "Claude Sonnet 4.6 (claude-sonnet-4-6)" in why
    low = compaction_refusal("claude-sonnet-4-6", 16_700, 20_000, 60_000)
    assert low == ("at a 20,000-token context window ctxtui compacts at 16,700 tokens, and the API's compaction "
                   "trigger may not be below 50,000 tokens; that needs a context window of at least 60,000")
    assert compaction_refusal("claude-sonnet-4-6", 50_000, 60_000) is None
