"""MCP servers in a session (issue 28), against real servers built with the `mcp` SDK: a stdio
calculator run as a subprocess and a streamable HTTP server on a loopback port. The loop runs
through the real `anthropic` SDK against the fake server, which asks for the MCP tools."""
from __future__ import annotations

import pytest

import json

from agent_core import events as ev
from agent_core.security.visible_text import hidden_characters
from tests.agent_helpers import MODEL, SECRET, collect, fake_agent, make_workspace, of, user_dirs
from tests.headless_helpers import run_headless
from tests.fake_anthropic import FakeAnthropic, reply, tool_use
from tests.mcp_helpers import calc_config, gone, http_server


def _results(fake) -> dict[str, dict]:
    """Every tool result the model was sent, by the id of its call."""
    out = {}
    for body in fake.message_requests:
        for m in body["messages"]:
            for b in m["content"] if isinstance(m["content"], list) else ():
                if b.get("type") == "tool_result":
                    out[b["tool_use_id"]] = b
    return out


def _text(block: dict) -> str:
    c = block["content"]
    return c if isinstance(c, str) else "".join(x.get("text", "") for x in c)


def _notices(events) -> list[str]:
    return [n.message for n in of(events, ev.Notice)]


async def test_a_stdio_server_s_tools_are_offered_called_counted_and_the_server_stopped(tmp_path):
    ws = make_workspace(tmp_path)
    cfg, pid = calc_config(tmp_path)
    script = [reply(tool_use("mcp__calc__add", {"a": 2, "b": 40}, id="t1")), reply("it is 42")]
    with FakeAnthropic(script) as fake:
        agent = fake_agent(ws, fake.base_url, mcp_config=[str(cfg)], allow=["mcp__calc"])
        events = await collect(agent.run("add 2 and 40"))
        await agent.aclose()
    assert "MCP server calc: 4 tools" in _notices(events)
    tools = {t["name"]: t for t in fake.message_requests[0]["tools"]}
    assert {"mcp__calc__add", "mcp__calc__crash", "mcp__calc__environment", "mcp__calc__shout"} <= set(tools)
    assert tools["mcp__calc__add"]["description"] == "Add two whole numbers."
    assert tools["mcp__calc__add"]["input_schema"]["required"] == ["a", "b"]
    assert list(tools)[:8] == ["bash", "read_file", "write_file", "edit_file", "glob", "grep", "compact",
                               "context_status"]           # built-in first: the cached prefix stays put
    result = _results(fake)["t1"]
    assert _text(result) == "42" and not result.get("is_error")
    ctx = of(events, ev.ContextUpdate)[-1]
    est = sum(agent.mcp_tokens.values())   # the breakdown is scaled to the reported count: near the estimate
    assert est > 0 and abs(ctx.categories["mcp_tools"] - est) <= est * 0.1
    assert set(agent.mcp_tokens) == {"calc"}
    (status,) = agent.mcp_status()
    assert status.state == "stopped" and "mcp__calc__add" in status.tools
    assert gone(pid)


async def test_mcp_tools_ask_first_and_allow_works_per_server_or_per_tool(tmp_path):
    ws = make_workspace(tmp_path)
    cfg, _pid = calc_config(tmp_path)
    script = [reply(tool_use("mcp__calc__add", {"a": 1, "b": 1}, id="a"),
                    tool_use("mcp__calc__environment", {}, id="e")), reply("ok")]
    with FakeAnthropic(script) as fake:
        agent = fake_agent(ws, fake.base_url, mcp_config=[str(cfg)], allow=["mcp__calc__add"])
        await collect(agent.run("go"))
        await agent.aclose()
    results = _results(fake)
    assert _text(results["a"]) == "2"
    assert results["e"]["is_error"] and "--allow mcp__calc__environment" in _text(results["e"])


async def test_no_server_sees_ctxtui_s_credentials(tmp_path):
    ws = make_workspace(tmp_path)
    cfg, _pid = calc_config(tmp_path, env={"CALC_MODE": "plain"})
    script = [reply(tool_use("mcp__calc__environment", {}, id="e")), reply("ok")]
    with FakeAnthropic(script) as fake:
        agent = fake_agent(ws, fake.base_url, mcp_config=[str(cfg)], allow=["mcp__calc"])
        await collect(agent.run("env"))
        await agent.aclose()
    text = _text(_results(fake)["e"])
    assert "CALC_MODE=plain" in text                      # the configured env reaches it
    assert SECRET not in text and "ANTHROPIC_API_KEY" not in text and "ANTHROPIC_BASE_URL" not in text


async def test_a_server_that_cannot_start_is_a_notice_and_the_session_goes_on(tmp_path):
    ws = make_workspace(tmp_path)
    cfg, pid = calc_config(tmp_path, mode="fail")
    script = [reply(tool_use("mcp__calc__add", {"a": 1, "b": 2}, id="t")), reply("fine without it")]
    with FakeAnthropic(script) as fake:
        agent = fake_agent(ws, fake.base_url, mcp_config=[str(cfg)], allow=["mcp__calc"])
        events = await collect(agent.run("go"))
        await agent.aclose()
    (notice,) = [n for n in _notices(events) if "calc" in n]
    assert "did not start" in notice and "cannot open the database /nope.db" in notice   # its stderr's last line
    assert of(events, ev.TurnFinished)[-1].stop_reason == "end_turn"
    assert not any(t["name"].startswith("mcp__") for t in fake.message_requests[0]["tools"])
    assert _results(fake)["t"]["is_error"] and "Unknown tool" in _text(_results(fake)["t"])
    assert gone(pid)


@pytest.mark.slow
async def test_a_server_that_hangs_is_given_up_after_the_timeout_and_ended(tmp_path):
    ws = make_workspace(tmp_path)
    cfg, pid = calc_config(tmp_path, mode="hang")
    with FakeAnthropic([reply("hello")]) as fake:
        agent = fake_agent(ws, fake.base_url, mcp_config=[str(cfg)], mcp_timeout=1.5)
        events = await collect(agent.run("hi"))
        await agent.aclose()
    (notice,) = [n for n in _notices(events) if "calc" in n]
    assert "did not answer within 1.5 s" in notice
    assert of(events, ev.TurnFinished)[-1].stop_reason == "end_turn"
    assert gone(pid)


async def test_a_server_that_dies_gives_error_results_and_a_notice(tmp_path):
    ws = make_workspace(tmp_path)
    cfg, pid = calc_config(tmp_path)
    script = [reply(tool_use("mcp__calc__crash", {}, id="c")), reply(tool_use("mcp__calc__add", {"a": 1, "b": 2},
                                                                               id="a")), reply("done")]
    with FakeAnthropic(script) as fake:
        agent = fake_agent(ws, fake.base_url, mcp_config=[str(cfg)], allow=["mcp__calc"])
        events = await collect(agent.run("crash it"))
        await agent.aclose()
    results = _results(fake)
    assert results["c"]["is_error"] and results["a"]["is_error"]
    assert "not running" in _text(results["a"])
    assert any("calc stopped answering" in n for n in _notices(events))
    assert of(events, ev.TurnFinished)[-1].stop_reason == "end_turn"
    assert gone(pid)


def test_hostile_tool_output_reaches_the_terminal_escaped(tmp_path):
    ws = make_workspace(tmp_path)
    cfg, _pid = calc_config(tmp_path)
    script = [reply(tool_use("mcp__calc__shout", {"text": "hi"}, id="s")), reply("ok")]
    with FakeAnthropic(script) as fake:
        environ = {**user_dirs(), "ANTHROPIC_API_KEY": SECRET, "ANTHROPIC_BASE_URL": fake.base_url}
        code, out, err = run_headless(["--workspace", str(ws), "--model", MODEL, "--mcp-config", str(cfg),
                                       "--allow", "mcp__calc", "-p", "shout"], environ)
    assert code == 0, err
    assert "\x1b" in _text(_results(fake)["s"])           # the model reads what the server said
    line = next(ln for ln in (out + err).splitlines() if ln.startswith("[tool error] mcp__calc__shout"))
    assert "hi" in line and not hidden_characters(out + err)
    assert "[note] MCP server calc: 4 tools" in out + err


async def test_a_streamable_http_server_with_headers(tmp_path):
    ws = make_workspace(tmp_path)
    with http_server(token="s3cret-token") as url:
        good = tmp_path / "good.json"
        good.write_text(json.dumps({"mcpServers": {"remote": {"type": "http", "url": url,
                                                              "headers": {"Authorization": "Bearer ${TOK}"}}}}))
        bad = tmp_path / "bad.json"
        bad.write_text(json.dumps({"mcpServers": {"nokey": {"type": "http", "url": url}}}))
        script = [reply(tool_use("mcp__remote__add", {"a": 20, "b": 22}, id="r")), reply("42")]
        with FakeAnthropic(script) as fake:
            import os
            os.environ["TOK"] = "s3cret-token"
            try:
                agent = fake_agent(ws, fake.base_url, mcp_config=[str(good), str(bad)], allow=["mcp__remote"])
                events = await collect(agent.run("add"))
                await agent.aclose()
            finally:
                del os.environ["TOK"]
    notices = _notices(events)
    assert "MCP server remote: 1 tool" in notices
    assert any(n.startswith("MCP server nokey did not start") for n in notices)
    assert _text(_results(fake)["r"]) == "42"
    log = agent.session.path.read_text()
    assert "s3cret-token" not in log              # the header's value is in no log line
