"""The agent knows its context (issue 27): `context_status` reports the figures the context pane
shows, is allowed without asking (headless too), and the compact tool's description names its
focus. Through the real SDK against the loopback fake server."""
from __future__ import annotations

import re

from agent_core import events as ev
from agent_core.tools.context_status import ContextStatusTool, describe
from agent_core.tools.base import ToolContext
from agent_core.tools.compact import CompactTool
from agent_core.tools.permissions import DEFAULT_POLICY
from tests.agent_helpers import collect, fake_agent, make_workspace, of
from tests.fake_anthropic import FakeAnthropic, reply, tool_use


async def test_the_model_reads_the_pane_s_figures_without_a_permission_prompt(tmp_path):
    ws = make_workspace(tmp_path)
    script = [reply("looking", tool_use("glob", {"pattern": "*"})), reply(tool_use("context_status", {})),
              reply("done")]
    with FakeAnthropic(script) as fake:
        agent = fake_agent(ws, fake.base_url)          # headless: anything not allowed is denied
        events = await collect(agent.run("how full is your context?"))
        await agent.aclose()
    assert not of(events, ev.PermissionRequest)
    (call,) = [c for c in of(events, ev.ToolCall) if c.name == "context_status"]
    (result,) = [r for r in of(events, ev.ToolResult) if r.id == call.id]
    assert not result.is_error
    blocks = [b for e in agent.entries for b in e.message["content"]
              if isinstance(b, dict) and b.get("type") == "tool_result" and b.get("tool_use_id") == call.id]
    text = str(blocks[0]["content"])
    # the figures of the last context event before the call ran
    ctx = [e for e in events[:events.index(result)] if isinstance(e, ev.ContextUpdate)][-1]
    assert f"of {ctx.window:,} tokens" in text and f"auto-compact at {ctx.threshold:,}" in text
    assert f"state: {ctx.state}" in text and "Session cost so far: $" in text
    assert re.search(r"Prompt cache: warm, [45]:\d\d left \(5m TTL\)", text), text


async def test_without_a_loop_it_says_the_figures_are_not_available(tmp_path):
    out = await ContextStatusTool().run({}, ToolContext(tmp_path))
    assert out.is_error and "not available" in out.content


def test_the_words_for_each_cache_state_and_unknown_prices():
    base = {"tokens": 150_000, "window": 200_000, "threshold": 167_000, "state": "warning", "cost_usd": None,
            "cache_ttl": "1h", "cached_tokens": 140_000, "uncached_tokens": 10_000}
    assert "17,000 tokens left before it" in describe({**base, "cache_expires_in_s": 100.0})
    assert "unknown (no price" in describe({**base, "cache_expires_in_s": 100.0})
    assert "warm, 1:40 left (1h TTL)" in describe({**base, "cache_expires_in_s": 100.0})
    assert "cold (its 1h TTL has passed)" in describe({**base, "cache_expires_in_s": 0.0})
    assert "nothing cached yet" in describe({**base, "cache_expires_in_s": None})


def test_allowed_by_default_read_only_and_named_in_the_compact_tool():
    assert DEFAULT_POLICY["context_status"] == "allow" and ContextStatusTool.read_only
    assert "`focus`" in CompactTool.description and "context_status" in CompactTool.description
    assert "threshold" in ContextStatusTool.description and "Read-only" in ContextStatusTool.description
