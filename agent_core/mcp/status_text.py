"""The MCP servers of a session in words, for /mcp: each one's state, its tools and what their
definitions take of the context (every request carries them)."""
from __future__ import annotations

from typing import Mapping, Sequence

from agent_core.security.visible_text import one_line

MAX_NAMES = 12


def servers_text(statuses: Sequence, tokens: Mapping[str, int]) -> str:
    if not statuses:
        return ("No MCP servers in this session. Name them with --mcp-config FILE (Claude Code's .mcp.json format), "
                "[mcp_servers.NAME] in the user config file, or a trusted project's .mcp.json.")
    lines = [f"MCP servers ({len(statuses)}):"]
    for s in statuses:
        head = f"• {one_line(s.name)} — {s.state}, {one_line(s.describe)}"
        if s.tools:
            short = [t.split("__", 2)[-1] for t in s.tools[:MAX_NAMES]]
            more = f" and {len(s.tools) - MAX_NAMES} more" if len(s.tools) > MAX_NAMES else ""
            head += (f": {len(s.tools)} tool{'s' * (len(s.tools) != 1)}, ~{tokens.get(s.name, 0):,} tokens "
                     f"({one_line(', '.join(short))}{more})")
        if s.error:
            head += f" — {one_line(s.error)}"
        lines.append(head)
    lines.append("Their tools ask before they run: --allow mcp__SERVER allows a server's, mcp__SERVER__TOOL one tool.")
    return "\n".join(lines)
