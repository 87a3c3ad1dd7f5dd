"""Issue 50: an MCP stdio server whose definition says `"sandbox": true` starts inside the
session's OS sandbox (a real `mcp` SDK server): it cannot read a planted key, write outside the
workspace or see other processes; the same server unsandboxed can (the control). A sandbox that
cannot run refuses the start and says why; `sandbox` must be a boolean, and only for stdio."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agent_core.mcp.hub import McpHub
from agent_core.mcp.servers_config import McpConfigError, parse_server
from agent_core.os_sandbox import probe
from tests.agent_core.os_sandbox.sandbox_helpers import CHECKOUT, plant, require_bwrap, sandbox

PEEK = Path(__file__).resolve().parents[2] / "mcp_servers" / "peek_server.py"


def spec(boxed: bool):
    return parse_server("peek", {"command": sys.executable, "args": [str(PEEK)], "sandbox": boxed}, "test", {})


@pytest.fixture
def layout(disk):
    return plant(disk, "planted-mcp-secret")


async def run_tools(boxed: bool, ws: Path, home: Path, other: Path) -> tuple[str, str, int, list[str]]:
    hub = McpHub([spec(boxed)], cwd=ws, start_timeout=30, os_sandbox=sandbox(ws, home, mode="off", write=CHECKOUT))
    try:
        notices = await hub.start()
        tools = {t.name.rsplit("__", 1)[1]: t for t in hub.tools}
        if not tools:
            return "", "", 0, notices
        key = (await tools["peek"].run({"path": f"{home}/.ssh/id_rsa"}, None)).content
        wrote = (await tools["poke"].run({"path": f"{other}/x"}, None)).content
        seen = int((await tools["pids"].run({}, None)).content)
        return key, wrote, seen, notices
    finally:
        await hub.stop()


async def test_a_sandboxed_server_is_confined_and_the_same_server_unsandboxed_is_not(layout):
    require_bwrap()
    ws, home, other = layout
    key, wrote, seen, _ = await run_tools(True, ws, home, other)
    assert "planted-mcp-secret" not in key and wrote.startswith("cannot write") and seen < 10
    assert not (other / "x").exists()
    key, wrote, seen, _ = await run_tools(False, ws, home, other)       # the control
    assert "planted-mcp-secret" in key and wrote == "written" and seen > 10


async def test_a_sandbox_that_cannot_run_refuses_the_start(layout, monkeypatch):
    ws, home, other = layout
    monkeypatch.setattr(probe, "check", lambda bwrap=None: probe.Availability(
        False, problem="bubblewrap (bwrap) is not installed", fix="Install bubblewrap"))
    _, _, _, notices = await run_tools(True, ws, home, other)
    assert len(notices) == 1 and "did not start" in notices[0]
    assert "asks for the OS sandbox" in notices[0] and "not installed" in notices[0]


def test_the_setting_is_checked():
    assert spec(True).sandbox and "(sandboxed)" in spec(True).describe()
    with pytest.raises(McpConfigError, match="sandbox must be true"):
        parse_server("peek", {"command": "x", "sandbox": "yes"}, "test", {})
    with pytest.raises(McpConfigError, match="stdio servers"):
        parse_server("web", {"type": "http", "url": "https://x.example/mcp", "sandbox": True}, "test", {})
