"""Every variable that carries a credential of ctxtui's, not only the API key and the common OTLP
headers: the per-signal OTLP headers and a collector (or proxy) URL with a password are held back
from the commands the model runs, shell mode and MCP servers, shed from /proc/<pid>/environ at
start, and scrubbed from what a tool prints (credentials.tool_environment, shed_from_environment)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_core import events as ev
from agent_core.mcp.servers_config import McpConfigError, parse_server
from agent_core.security import credentials
from agent_core.tools import ToolContext, ToolRegistry
from compaction.scrub import REDACTED, forget_secrets
from tests.agent_helpers import collect, demo_agent, fake_agent, make_workspace, of
from tests.fake_anthropic import FakeAnthropic, reply, tool_use
from tests.mcp_helpers import calc_config

ROOT = Path(__file__).resolve().parents[3]
PASSWORD = "pw-of-the-collector-0123456789"
TOKENS = {s: f"{s.lower()}-token-0123456789abcdef" for s in ("TRACES", "METRICS", "LOGS")}
# name -> (value, the secret in it that nothing may show)
CREDENTIALS = {
    **{f"OTEL_EXPORTER_OTLP_{s}_HEADERS": (f"authorization=Bearer%20{t},x-team=ctx", t) for s, t in TOKENS.items()},
    "CTXTUI_OTEL_ENDPOINT": (f"https://ctx:{PASSWORD}a@collector.example:4318", f"{PASSWORD}a"),
    "OTEL_EXPORTER_OTLP_ENDPOINT": (f"https://otel:{PASSWORD}b@collector.example:4318", f"{PASSWORD}b"),
    **{f"OTEL_EXPORTER_OTLP_{s}_ENDPOINT": (f"https://{s.lower()}:{PASSWORD}{s}@c.example/v1/{s.lower()}",
                                            f"{PASSWORD}{s}") for s in TOKENS},
}
PLAIN = {"OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": "http://collector.example:4318/v1/logs", "SOME_VAR": "kept"}


@pytest.fixture
def credentials_set(monkeypatch):
    for name, (value, _secret) in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    return CREDENTIALS


@pytest.fixture
def nothing_held():
    """shed_from_environment (in-process) fills the module's store and the scrubber: undone here."""
    before, environ = dict(credentials._held), dict(os.environ)
    yield
    credentials._held.clear()
    credentials._held.update(before)
    os.environ.update({k: v for k, v in environ.items() if k not in os.environ})   # what else it shed
    forget_secrets()


def _shows_none(text: str) -> list[str]:
    return [name for name, (_v, secret) in CREDENTIALS.items() if f"{name}=" in text or secret in text]


async def test_a_bash_tool_sees_none_of_the_credential_variables(tmp_path, credentials_set):
    out = await ToolRegistry().execute("bash", {"command": "env"}, ToolContext(make_workspace(tmp_path)))
    assert not out.is_error and "PATH=" in out.content
    assert _shows_none(out.content) == []


async def test_a_variable_without_a_password_is_no_credential_and_stays(tmp_path, credentials_set, monkeypatch):
    for name, value in PLAIN.items():
        monkeypatch.setenv(name, value)
    out = await ToolRegistry().execute("bash", {"command": "env"}, ToolContext(make_workspace(tmp_path)))
    assert all(f"{k}={v}" in out.content for k, v in PLAIN.items())


def test_an_environment_given_to_the_context_is_held_back_from_too(tmp_path):
    given = {**{k: v for k, (v, _s) in CREDENTIALS.items()}, "ANTHROPIC_API_KEY": "sk-ant-0123456789", **PLAIN}
    assert ToolContext(make_workspace(tmp_path), env=given).bash_env() == PLAIN


async def test_shell_mode_sees_none_of_them(tmp_path, credentials_set):
    agent = demo_agent(make_workspace(tmp_path), interactive=True)
    try:
        ran = of(await collect(agent.shell("env")), ev.ShellRan)[0]
    finally:
        await agent.aclose()
    assert "PATH=" in ran.output and _shows_none(ran.output) == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's")
def test_shedding_takes_every_one_out_of_proc_environ_and_keeps_it_in_memory(tmp_path):
    probe = ("import json, os; from agent_core.security import credentials as c; c.shed_from_environment(); "
             "print(json.dumps([open('/proc/self/environ', 'rb').read().decode('utf-8', 'replace'), c.held()]))")
    env = {**os.environ, **{k: v for k, (v, _s) in CREDENTIALS.items()}, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60,
                         cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    environ, held = json.loads(out.stdout)
    assert _shows_none(environ) == []
    assert held == {k: v for k, (v, _s) in CREDENTIALS.items()}


async def test_their_secrets_are_scrubbed_from_a_tool_result(tmp_path, credentials_set, nothing_held):
    credentials.shed_from_environment([])          # no command line to re-execute: taken out of os.environ
    assert not set(CREDENTIALS) & set(os.environ)
    printed = " ".join(secret for _v, secret in CREDENTIALS.values())
    out = await ToolRegistry().execute("bash", {"command": f"echo {printed}"}, ToolContext(make_workspace(tmp_path)))
    assert [s for _v, s in CREDENTIALS.values() if s in out.content] == []
    assert out.content.count(REDACTED) == len(CREDENTIALS)


def test_the_one_rule_names_each_variable():
    environ = {**{k: v for k, (v, _s) in CREDENTIALS.items()}, **PLAIN, "OTEL_EXPORTER_OTLP_HEADERS": "a=b"}
    assert credentials.tool_environment(environ) == PLAIN
    assert set(credentials.credentials_in(environ)) == {*CREDENTIALS, "OTEL_EXPORTER_OTLP_HEADERS"} - set(PLAIN)


# ------------------------------------------------------------------ MCP servers

@pytest.mark.parametrize("name", sorted(CREDENTIALS))
def test_an_mcp_server_s_config_may_not_expand_one(name, monkeypatch):
    value, secret = CREDENTIALS[name]
    with pytest.raises(McpConfigError, match="ctxtui's own credential") as e:
        parse_server("srv", {"command": "x", "env": {"V": f"${{{name}}}"}}, "m.json", {name: value})
    assert secret not in str(e.value)
    monkeypatch.setitem(credentials._held, name, value)      # shed at start: held, not in the environment
    with pytest.raises(McpConfigError, match="ctxtui's own credential"):
        parse_server("srv", {"type": "http", "url": "https://x.example/mcp", "headers": {"A": f"${{{name}}}"}},
                     "m.json", {})


async def test_an_mcp_stdio_server_sees_none_of_them(tmp_path, credentials_set):
    ws = make_workspace(tmp_path)
    cfg, _pid = calc_config(tmp_path, env={"CALC_MODE": "plain"})
    script = [reply(tool_use("mcp__calc__environment", {}, id="e")), reply("ok")]
    with FakeAnthropic(script) as fake:
        agent = fake_agent(ws, fake.base_url, mcp_config=[str(cfg)], allow=["mcp__calc"])
        try:
            await collect(agent.run("env"))
        finally:
            await agent.aclose()
    result = next(b for m in fake.message_requests[-1]["messages"] if isinstance(m["content"], list)
                  for b in m["content"] if b.get("type") == "tool_result")
    text = json.dumps(result["content"])
    assert "CALC_MODE=plain" in text and _shows_none(text) == []
