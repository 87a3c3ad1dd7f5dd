"""Secrets in an MCP server's definition (attacker review): a `${VAR}` expanded into its arguments,
URL or headers, a URL's password, is never echoed — not in the "did not start" notice the TUI and
headless show, not on stream-json stdout, not in the session log, not in /mcp — and a server that
repeats its token to the model has it scrubbed. Against real servers built with the `mcp` SDK."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from agent_core import events as ev
from agent_core.mcp.servers_config import collect, parse_server
from compaction.scrub import registered
from tests.agent_helpers import MODEL, SECRET, collect as collect_events, fake_agent, make_workspace, of, user_dirs
from tests.fake_anthropic import FakeAnthropic, reply, tool_use
from tests.headless_helpers import run_headless

HEAVY = Path(__file__).resolve().parents[2] / "mcp_servers" / "heavy_server.py"
TOKEN = "tok-stdio-SECRET-0123456789"      # expanded into a stdio server's arguments
PASSWORD = "pw-url-SECRET-0123456789"       # expanded into a URL's password
KEY = "key-query-SECRET-0123456789"         # expanded into a URL's query
BEARER = "hdr-SECRET-0123456789"            # expanded into a header
SECRETS = (TOKEN, PASSWORD, KEY, BEARER)


def _config(folder: Path) -> Path:
    """A stdio server that repeats its arguments on stderr and exits, and an HTTP server on a port
    nothing listens on: neither starts, so both notices quote their definitions."""
    path = folder / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {
        "local": {"command": sys.executable, "args": [str(HEAVY), "fail-echo", "--token", "${MCP_T_TOKEN}"]},
        "remote": {"type": "http", "url": "http://bob:${MCP_T_PW}@127.0.0.1:9/mcp?key=${MCP_T_KEY}&page=2",
                   "headers": {"Authorization": "Bearer ${MCP_T_BEARER}"}},
    }}))
    return path


def _set_secrets(monkeypatch) -> None:
    for var, value in (("MCP_T_TOKEN", TOKEN), ("MCP_T_PW", PASSWORD), ("MCP_T_KEY", KEY),
                       ("MCP_T_BEARER", BEARER)):
        monkeypatch.setenv(var, value)


def _leaks(text: str) -> list[str]:
    return [s for s in SECRETS if s in text]


async def test_the_did_not_start_notice_status_and_session_log_hold_no_expanded_secret(tmp_path, monkeypatch):
    _set_secrets(monkeypatch)
    ws = make_workspace(tmp_path)
    cfg = _config(tmp_path)
    with FakeAnthropic([reply("fine without them")]) as fake:
        agent = fake_agent(ws, fake.base_url, mcp_config=[str(cfg)], mcp_timeout=20)
        events = await collect_events(agent.run("go"))
        statuses = agent.mcp_status()
        await agent.aclose()
    notices = [n.message for n in of(events, ev.Notice) if "did not start" in n.message]
    assert len(notices) == 2, notices
    local = next(n for n in notices if "local" in n)
    remote = next(n for n in notices if "remote" in n)
    assert "--token ${MCP_T_TOKEN}" in local            # the definition as written: what to fix is visible
    assert "refusing to start with --token [REDACTED]" in local   # the server's stderr, its token scrubbed
    assert "http://bob:${MCP_T_PW}@127.0.0.1:9/mcp?key=${MCP_T_KEY}&page=2" in remote
    assert not _leaks("\n".join(notices)), notices
    shown = " ".join(f"{s.describe} {s.error}" for s in statuses)          # /mcp
    assert "${MCP_T_TOKEN}" in shown and not _leaks(shown)
    assert not _leaks(agent.session.path.read_text())


def _headless_with_failing_servers(tmp_path, monkeypatch, *extra: str) -> tuple[str, str]:
    """(stdout, stderr) of a headless run whose two MCP servers (secrets expanded in) do not start."""
    _set_secrets(monkeypatch)
    ws = make_workspace(tmp_path)
    cfg = _config(tmp_path)
    with FakeAnthropic([reply("fine")]) as fake:
        environ = {**user_dirs(), "ANTHROPIC_API_KEY": SECRET, "ANTHROPIC_BASE_URL": fake.base_url,
                   "CTXTUI_MCP_TIMEOUT": "20"}
        code, out, err = run_headless(["--workspace", str(ws), "--model", MODEL, "--mcp-config", str(cfg),
                                       *extra, "-p", "go"], environ)
    assert code == 0, err
    return out, err


def test_stream_json_stdout_of_a_headless_run_holds_no_expanded_secret(tmp_path, monkeypatch):
    out, err = _headless_with_failing_servers(tmp_path, monkeypatch, "--output-format", "stream-json")
    notices = [d["message"] for d in map(json.loads, out.splitlines()) if d.get("type") == "notice"]
    assert sum("did not start" in n for n in notices) == 2, notices
    assert not _leaks(out) and not _leaks(err)


def test_headless_text_notes_hold_no_expanded_secret(tmp_path, monkeypatch):
    out, err = _headless_with_failing_servers(tmp_path, monkeypatch)
    assert "[note] MCP server local did not start" in out + err
    assert not _leaks(out + err)


async def test_a_server_that_repeats_its_token_to_the_model_has_it_scrubbed(tmp_path, monkeypatch):
    monkeypatch.setenv("MCP_T_TOKEN", TOKEN)
    ws = make_workspace(tmp_path)
    cfg = tmp_path / "mcp.json"
    cfg.write_text(json.dumps({"mcpServers": {"heavy": {"command": sys.executable, "args": [str(HEAVY), "ok"],
                                                        "env": {"HEAVY_TOKEN": "${MCP_T_TOKEN}"}}}}))
    script = [reply(tool_use("mcp__heavy__getenv", {"name": "HEAVY_TOKEN"}, id="g")), reply("ok")]
    with FakeAnthropic(script) as fake:
        agent = fake_agent(ws, fake.base_url, mcp_config=[str(cfg)], allow=["mcp__heavy"], mcp_timeout=20)
        await collect_events(agent.run("what is the token"))
        await agent.aclose()
    sent = json.dumps(fake.message_requests[-1]["messages"])
    assert "[REDACTED]" in sent and TOKEN not in sent


def test_what_is_registered_at_load_and_what_is_not(tmp_path, monkeypatch):
    """Expanded values, a URL's password, credential headers and env values are registered with
    the scrubber; a path (`${HOME}`) and a plain header such as Accept are not: registering them
    would redact every file path, or every `application/json`, in every tool result."""
    home = tmp_path / "home-folder"
    home.mkdir()
    environ = {"HOME": str(home), "MCP_T_TOKEN": TOKEN, "MCP_T_KEY": KEY}
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"mcpServers": {
        "a": {"command": "node", "args": ["${HOME}/srv.js", "--token", "${MCP_T_TOKEN}"],
              "env": {"GITHUB_TOKEN": "ghp-literal-SECRET-0123", "LOG_LEVEL": "verbose-logging"}},
        "b": {"type": "http", "url": "https://u:literal-PASSWORD-1@x.example/mcp?k=${MCP_T_KEY}",
              "headers": {"X-Api-Key": "literal-api-key-0123", "Accept": "application/json"}},
    }}))
    collect(flag_files=(path,), environ=environ)
    got = set(registered())
    assert {TOKEN, KEY, "ghp-literal-SECRET-0123", "literal-PASSWORD-1", "literal-api-key-0123"} <= got
    assert str(home) not in got and "application/json" not in got and "verbose-logging" not in got


def test_describe_shows_what_was_written_and_hides_literal_passwords():
    spec = parse_server("w", {"type": "http", "url": "https://u:literal-PASSWORD-1@x.example/mcp?api_key=abc123xyz"},
                        "f", {})
    assert spec.describe() == "http https://u:[REDACTED]@x.example/mcp?api_key=[REDACTED]"
    stdio = parse_server("s", {"command": "${BIN:-node}", "args": ["--t", "${T}"]}, "f", {"T": "short"})
    assert stdio.describe() == "${BIN:-node} --t ${T}" and stdio.args == ("--t", "short")
