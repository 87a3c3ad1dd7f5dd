"""A tool whose name the API would refuse (`count.files`: a dot) is offered as
mcp__SERVER__count_files — the name the hub checks is the name the model gets — and a call under
that name reaches the server's own `count.files` (a real `mcp` SDK server)."""
from __future__ import annotations

import re
import sys
from pathlib import Path

from agent_core.mcp.hub import McpHub
from agent_core.mcp.servers_config import parse_server

PEEK = Path(__file__).resolve().parents[2] / "mcp_servers" / "peek_server.py"
API_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")


async def test_a_dotted_tool_name_is_offered_as_the_api_accepts_it_and_still_called(tmp_path):
    (tmp_path / "a").write_text("x")
    (tmp_path / "b").write_text("y")
    hub = McpHub([parse_server("peek", {"command": sys.executable, "args": [str(PEEK)]}, "test", {})],
                 start_timeout=30)
    try:
        await hub.start()
        names = [t.name for t in hub.tools]
        assert all(API_NAME.match(n) for n in names), names
        tool = next(t for t in hub.tools if t.name == "mcp__peek__count_files")
        out = await tool.run({"path": str(tmp_path)}, None)
        assert out.content == "2" and not out.is_error
    finally:
        await hub.stop()
