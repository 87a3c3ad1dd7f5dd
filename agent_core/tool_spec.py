"""Names and input shapes of the built-in tools, shared by the tools, the demo model and tests."""
from __future__ import annotations

TOOL_NAMES = ("bash", "read_file", "write_file", "edit_file", "glob", "grep", "compact", "context_status")
# bash {command: str, timeout?: float seconds}
# read_file {path: str, offset?: int (1-based line), limit?: int lines}
# write_file {path: str, content: str}
# edit_file {path: str, old_string: str, new_string: str}
# glob {pattern: str}
# grep {pattern: str (regex), path?: str, glob?: str}
# compact {focus?: str}
# context_status {}

MCP_PREFIX = "mcp__"            # an MCP server's tools: mcp__SERVER__TOOL (Claude Code's naming)
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


def is_mcp_name(name: str) -> bool:
    """`mcp__SERVER` (every tool of a server) or `mcp__SERVER__TOOL`, as --allow takes them."""
    rest = name[len(MCP_PREFIX):]
    return name.startswith(MCP_PREFIX) and bool(rest) and not rest.startswith("_") and set(rest) <= _NAME_CHARS
