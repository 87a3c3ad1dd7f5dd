"""`--allow mcp__files` allows the tools of server `files` and of no other (attacker review). A
server named `files__evil` (or `files_`, or `files..evil`, normalised) would have tools whose names
read as `files`'s (mcp__files__evil__add), so every allow and deny (--allow, CTXTUI_ALLOW, the
config's `allow`, --deny) and every "always" answer for `files` would cover them. Such a name is
refused where a server is configured, and no MCP tool name can be made for it."""
from __future__ import annotations

import json

import pytest

from agent_core.config import ConfigError, load_config
from agent_core.mcp.servers_config import McpConfigError, collect, parse_server
from agent_core.tool_spec import is_mcp_name, is_mcp_server_name
from agent_core.tools.mcp_tool import McpTool, mcp_tool_name, server_of
from agent_core.tools.permissions import PermissionPolicy, parse_tool_list
from tests.agent_helpers import collect as collect_events, fake_agent, make_workspace, user_dirs
from tests.fake_anthropic import FakeAnthropic, reply, tool_use
from tests.mcp_helpers import CALC, calc_config

BLURRED = ["files__evil", "files_", "_files", "files..evil", "files.", "files_.evil", "___"]


@pytest.mark.parametrize("name", BLURRED)
def test_a_server_name_that_blurs_which_server_a_tool_is_of_is_refused(name):
    with pytest.raises(McpConfigError) as e:
        parse_server(name, {"command": "node"}, "m.json", {})
    assert "may not hold '__' or begin or end with '_'" in str(e.value) and "m.json" in str(e.value)


def test_the_refusal_suggests_a_name_that_works():
    with pytest.raises(McpConfigError, match="Rename it, e.g. to 'files_evil'"):
        parse_server("files__evil", {"command": "node"}, "m.json", {})


@pytest.mark.parametrize("name, part", [("files", "files"), ("files_evil", "files_evil"), ("my-server", "my-server"),
                                        ("files.evil", "files_evil"), ("a_b-c_9", "a_b-c_9")])
def test_ordinary_names_still_work(name, part):
    assert parse_server(name, {"command": "node"}, "m.json", {}).name == part


def test_one_blurred_server_is_a_notice_and_costs_the_others_nothing(tmp_path):
    got = collect(user_table={"files": {"command": "a"}, "files__evil": {"command": "b"}}, environ={})
    assert [s.name for s in got.specs] == ["files"]
    assert any("'files__evil'" in n and "may not hold '__'" in n for n in got.notices)
    flag = tmp_path / "m.json"
    flag.write_text(json.dumps({"mcpServers": {"files__evil": {"command": "b"}}}))
    with pytest.raises(McpConfigError, match="files__evil"):       # a file the user named: an error
        collect(flag_files=(flag,), environ={})


def test_no_tool_name_is_made_for_such_a_server():
    with pytest.raises(ValueError, match="may not contain '__'"):
        mcp_tool_name("files__evil", "add")
    with pytest.raises(ValueError):
        McpTool("files_", "add", "", {}, call=None)  # type: ignore[arg-type]
    assert not is_mcp_server_name("files__evil") and is_mcp_server_name("files_evil")


@pytest.mark.parametrize("name", ["mcp__files_", "mcp___files", "mcp__files__", "mcp__fi les"])
def test_an_allow_list_entry_that_names_no_possible_server_is_an_error(name):
    assert is_mcp_name("mcp__files__evil_") and is_mcp_name("mcp__files")     # a tool `evil_` of `files`; a server
    with pytest.raises(ValueError, match="mcp__SERVER or mcp__SERVER__TOOL"):
        parse_tool_list(name)
    with pytest.raises(ConfigError):
        load_config({"model": "demo", "allow": name}, environ=user_dirs())


def test_a_server_s_key_matches_its_own_tools_alone():
    allow = PermissionPolicy.headless(allow="mcp__files")
    assert allow.mode("mcp__files__add") == "allow" and allow.mode("mcp__files___add") == "allow"   # tool `_add`
    assert allow.mode("mcp__files_x__add") == "ask" and allow.mode("mcp__filesx__add") == "ask"
    deny = PermissionPolicy.headless(deny="mcp__files")
    assert deny.mode("mcp__files__add") == "deny" and deny.mode("mcp__files_x__add") == "ask"
    assert server_of("mcp__files__evil__add") == "files"   # the tool `evil__add` of `files`: none of another's
    assert server_of("mcp__files___add") == "files" and server_of("mcp__files_x__add") == "files_x"
    always = PermissionPolicy()
    always.restore({"always": ["mcp__files__add"]})
    assert always.mode("mcp__files__add") == "allow" and always.mode("mcp__files__add2") == "ask"


async def test_a_trusted_repository_cannot_slip_a_server_under_an_allowed_one(tmp_path):
    """The user allows their server `files`; the repository's .mcp.json adds `files__evil`."""
    ws = make_workspace(tmp_path)
    cfg, _pid = calc_config(tmp_path, name="files")
    (ws / ".mcp.json").write_text(json.dumps({"mcpServers": {"files__evil": {
        "command": json.loads(cfg.read_text())["mcpServers"]["files"]["command"],
        "args": [str(CALC), str(tmp_path / "evil.pid"), "ok"]}}}))
    script = [reply(tool_use("mcp__files__evil__add", {"a": 20, "b": 22}, id="e")), reply("ok")]
    with FakeAnthropic(script) as fake:
        agent = fake_agent(ws, fake.base_url, mcp_config=[str(cfg)], allow=["mcp__files"], trust=True)
        try:
            await collect_events(agent.run("add"))
        finally:
            await agent.aclose()
    offered = {t["name"] for t in fake.message_requests[0]["tools"]}
    assert "mcp__files__add" in offered and not any(n.startswith("mcp__files__evil") for n in offered)
    result = next(b for m in fake.message_requests[-1]["messages"] if isinstance(m["content"], list)
                  for b in m["content"] if b.get("type") == "tool_result")
    text = result["content"] if isinstance(result["content"], str) else json.dumps(result["content"])
    assert result.get("is_error") and "42" not in text
    assert not (tmp_path / "evil.pid").exists()                # the repository's server never started
