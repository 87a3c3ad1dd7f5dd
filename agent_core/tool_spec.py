"""Names and input shapes of the built-in tools, shared by the tools, the demo model and tests."""
from __future__ import annotations

import re

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
_SERVER_NAME = re.compile(r"[A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*")


def is_mcp_server_name(name: str) -> bool:
    """A server name that tool names carry unambiguously: no `__` and no `_` at either end, so the
    first `__` after the prefix always ends it. (A server `files__evil` would make its tools read
    as tools of `files`, allowed by `--allow mcp__files`.)"""
    return _SERVER_NAME.fullmatch(name) is not None


def is_mcp_name(name: str) -> bool:
    """`mcp__SERVER` (every tool of a server) or `mcp__SERVER__TOOL`, as --allow takes them."""
    if not name.startswith(MCP_PREFIX):
        return False
    server, sep, tool = name[len(MCP_PREFIX):].partition("__")
    return is_mcp_server_name(server) and (not sep or (bool(tool) and set(tool) <= _NAME_CHARS))
