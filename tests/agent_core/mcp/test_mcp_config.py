"""Which MCP servers a session starts (issue 28): Claude Code's format from --mcp-config, the user
file's [mcp_servers], a project's .mcp.json only when trusted; ${VAR} expansion that never hands
over ctxtui's credentials; errors that name the file and the server; no secret in the log meta."""
from __future__ import annotations

import json

import pytest

from agent_core.config import ConfigError, load_config
from agent_core.loop.factory import mcp_servers
from agent_core.mcp.servers_config import McpConfigError, collect, parse_server, tool_name_part
from agent_core.tools.permissions import PermissionPolicy, parse_tool_list
from tests.agent_helpers import user_dirs


def _write(path, servers):
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def test_both_transports_in_claude_code_s_format(tmp_path):
    f = _write(tmp_path / "m.json", {"files": {"command": "npx", "args": ["-y", "srv"], "env": {"A": "1"}},
                                     "web": {"type": "http", "url": "https://x.example/mcp",
                                             "headers": {"Authorization": "Bearer ${TOK}"}}})
    got = {s.name: s for s in collect(flag_files=(f,), environ={"TOK": "abc"}).specs}
    assert got["files"].transport == "stdio" and got["files"].args == ("-y", "srv") and got["files"].env == {"A": "1"}
    assert got["web"].transport == "http" and got["web"].headers == {"Authorization": "Bearer abc"}
    assert "abc" not in got["web"].describe()          # what /mcp and notices say holds no header value


@pytest.mark.parametrize("raw, words", [
    ({"type": "sse", "url": "http://x"}, "type 'sse' is not supported"),
    ({"args": ["x"]}, "command must be the program"),
    ({"type": "http", "url": "ftp://x"}, "url must be an http"),
    ({"command": "x", "args": "not a list"}, "args must be a list"),
    ({"command": "${NOPE}"}, "${NOPE} is not set"),
    ({"command": "x", "env": {"K": "${ANTHROPIC_API_KEY}"}}, "ctxtui's own credential"),
])
def test_a_bad_definition_says_what_to_fix(raw, words):
    with pytest.raises(McpConfigError, match="MCP server 'srv' in f.json") as e:
        parse_server("srv", raw, "f.json", {"ANTHROPIC_API_KEY": "sk-ant-x"})
    assert words in str(e.value)


def test_defaults_expand_and_hostile_names_become_api_tool_names():
    spec = parse_server("my\x1bserver.x", {"command": "${BIN:-node}"}, "f", {})
    assert spec.command == "node"
    assert spec.name == tool_name_part("my\x1bserver.x") and set(spec.name) <= set(
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
    with pytest.raises(McpConfigError) as e:        # two in a row would be '__': refused, shown, not obeyed
        parse_server("my server!\x1b[2J", {"command": "node"}, "f", {})
    assert "\x1b" not in str(e.value) and "e.g. to 'my_server_2J'" in str(e.value)


def test_a_project_file_is_read_only_in_a_trusted_folder(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    _write(ws / ".mcp.json", {"planted": {"command": "curl", "args": ["evil.example"]}})
    untrusted = collect(workspace=ws, trusted=False, environ={})
    assert untrusted.specs == [] and "not trusted" in untrusted.notices[0]
    trusted = collect(workspace=ws, trusted=True, environ={})
    assert [s.name for s in trusted.specs] == ["planted"]


def test_later_sources_override_earlier_ones_by_name(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    _write(ws / ".mcp.json", {"a": {"command": "project"}, "b": {"command": "project"}})
    flag = _write(tmp_path / "f.json", {"b": {"command": "flag"}})
    got = collect(flag_files=(flag,), user_table={"a": {"command": "user"}, "c": {"command": "user"}},
                  workspace=ws, trusted=True, environ={})
    assert {s.name: s.command for s in got.specs} == {"a": "project", "b": "flag", "c": "user"}


def test_a_flag_file_that_cannot_be_used_is_a_config_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    config = load_config({"model": "demo", "mcp_config": [str(bad)]}, environ=user_dirs(), workspace=tmp_path)
    with pytest.raises(ConfigError, match="not valid JSON"):
        mcp_servers(config)
    missing = load_config({"model": "demo", "mcp_config": [str(tmp_path / "none.json")]}, environ=user_dirs(),
                          workspace=tmp_path)
    with pytest.raises(ConfigError, match="cannot read the MCP config"):
        mcp_servers(missing)


def test_the_user_file_names_servers_and_the_log_meta_holds_no_header(tmp_path, monkeypatch):
    cfg_dir = tmp_path / "config" / "ctxtui"
    cfg_dir.mkdir(parents=True)
    (cfg_dir / "config.toml").write_text('[mcp_servers.web]\ntype = "http"\nurl = "https://x.example/mcp"\n'
                                         '[mcp_servers.web.headers]\nAuthorization = "Bearer hidden-value"\n')
    environ = {**user_dirs(), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    config = load_config({"model": "demo", "mcp_config": [str(tmp_path / "x.json")]}, environ=environ,
                         workspace=tmp_path)
    assert config.mcp_servers["web"]["url"] == "https://x.example/mcp"
    meta = json.dumps(config.public_dict())
    assert "hidden-value" not in meta and "mcp_servers" not in meta and str(tmp_path / "x.json") in meta


def test_a_repository_s_env_may_not_name_an_mcp_config(tmp_path):
    (tmp_path / ".env").write_text("CTXTUI_MCP_CONFIG=/tmp/evil.json\n")
    config = load_config({"model": "demo"}, environ=user_dirs(), workspace=tmp_path)
    assert config.mcp_config == () and "CTXTUI_MCP_CONFIG" in config.ignored


def test_allow_takes_a_server_or_one_tool():
    assert parse_tool_list("mcp__calc,mcp__web__fetch") == ["mcp__calc", "mcp__web__fetch"]
    with pytest.raises(ValueError, match="mcp__SERVER"):
        parse_tool_list("mcp__")
    policy = PermissionPolicy.headless(allow=["mcp__calc", "mcp__web__fetch"])
    assert policy.mode("mcp__calc__add") == "allow" and policy.mode("mcp__web__fetch") == "allow"
    assert policy.mode("mcp__web__post") == "ask" and policy.mode("mcp__calcx__add") == "ask"
    denied = PermissionPolicy.headless(allow=["mcp__calc"], deny=["mcp__calc__crash"])
    assert denied.mode("mcp__calc__crash") == "deny" and denied.mode("mcp__calc__add") == "allow"
