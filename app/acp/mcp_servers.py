"""The MCP servers an editor names in session/new and session/load, in ctxtui's own form.

ctxtui starts them itself (agent_core/mcp), as it starts the ones its user file names: stdio
servers and streamable HTTP ones. They are the user's (the editor's settings), not the
repository's, so no trust is needed; their tools still ask first, through the editor. SSE and
ACP-transport servers are not supported: said once, and left out.
"""
from __future__ import annotations

from typing import Any


def server_table(servers: list[Any] | None) -> tuple[dict[str, dict], list[str]]:
    """({name: spec in Claude Code's mcpServers form}, notices for the servers left out)."""
    table: dict[str, dict] = {}
    notices: list[str] = []
    for s in servers or ():
        kind = getattr(s, "type", None)
        if kind is None and hasattr(s, "command"):
            table[s.name] = {"command": s.command, "args": list(s.args), "env": {e.name: e.value for e in s.env}}
        elif kind == "http":
            table[s.name] = {"type": "http", "url": s.url, "headers": {h.name: h.value for h in s.headers}}
        else:
            notices.append(f"MCP server {s.name}: the {kind} transport is not supported by ctxtui (stdio and http "
                           "are); it is not started.")
    return table, notices
