"""The cache TTL a session asks for: the Anthropic client's markers and the demo's usage."""
from __future__ import annotations

import pytest

from agent_core.providers.anthropic_client import AnthropicClient, cache_control, with_cache_breakpoints
from agent_core.providers.demo.model import DemoModel

MSGS = [{"role": "user", "content": [{"type": "text", "text": "hello " * 800}]}]
TOOLS = [{"name": "glob", "description": "find files", "input_schema": {"type": "object"}}]


def markers(*parts) -> list[dict]:
    found: list[dict] = []

    def walk(x):
        if isinstance(x, dict):
            if "cache_control" in x:
                found.append(x["cache_control"])
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
    for p in parts:
        walk(p)
    return found


@pytest.mark.parametrize("ttl,marker", [("5m", {"type": "ephemeral"}), ("1h", {"type": "ephemeral", "ttl": "1h"})])
def test_breakpoints_carry_the_ttl(ttl, marker):
    system, msgs, tools = with_cache_breakpoints("a system prompt", MSGS, TOOLS, ttl)
    assert markers(system, msgs, tools) == [marker] * 3
    assert "cache_control" not in MSGS[0]["content"][0]          # the caller's request is not touched


def test_a_bad_ttl_is_refused_clearly():
    with pytest.raises(ValueError, match="5m, 1h"):
        cache_control("10m")
    with pytest.raises(ValueError, match="cache TTL"):
        AnthropicClient(api_key="sk-ant-test-xyz", base_url="http://127.0.0.1:9", cache_ttl="1d")


def test_the_client_asks_for_its_ttl_and_sends_no_tool_choice_for_summaries():
    client = AnthropicClient(api_key="sk-ant-test-xyz", base_url="http://127.0.0.1:9", cache_ttl="1h")
    for purpose in ("main", "compaction"):
        params = client.request_params(system="sys " * 10, messages=MSGS, tools=TOOLS, max_tokens=100,
                                       purpose=purpose)
        assert "tool_choice" not in params and params["tools"][0]["name"] == "glob"
        hour = {"type": "ephemeral", "ttl": "1h"}
        assert markers(params["system"], params["messages"], params["tools"]) == [hour] * 3


async def test_the_demo_bills_its_writes_at_its_ttl(tmp_path):
    async def usage(model):
        async for item in model.stream(system="sys " * 10, messages=MSGS, tools=TOOLS, max_tokens=200):
            last = item
        return last.usage

    long = await usage(DemoModel(tmp_path, cache_ttl="1h"))
    short = await usage(DemoModel(tmp_path))
    assert long["cache_creation"]["ephemeral_1h_input_tokens"] == long["cache_creation_input_tokens"] > 0
    assert long["cache_creation"]["ephemeral_5m_input_tokens"] == 0
    assert short["cache_creation"]["ephemeral_5m_input_tokens"] == short["cache_creation_input_tokens"] > 0
    with pytest.raises(ValueError):
        DemoModel(tmp_path, cache_ttl="2h")
