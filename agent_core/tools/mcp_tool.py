"""An MCP server's tool as the model sees it: `mcp__SERVER__TOOL` (Claude Code's naming), its
description and schema as the server lists them, each call passed to the server's connection.

The server validates its own arguments (its schemas need not be the flat ones `check_input`
reads); a server that cannot answer gives an error result saying so, never an exception."""
from __future__ import annotations

from typing import Any, Awaitable, Callable

from agent_core.tool_spec import MCP_PREFIX, is_mcp_server_name
from agent_core.tools.base import Tool, ToolContext, ToolOutput

PREFIX = MCP_PREFIX
MAX_DESCRIPTION = 2_048        # a server's description is capped: it is sent with every request
MAX_NAME = 64                  # the API's limit on a tool name

Call = Callable[[str, dict], Awaitable[tuple[str, bool]]]


def mcp_tool_name(server: str, tool: str) -> str:
    """Every MCP tool's name is made here, so no server whose name would blur which server a tool
    belongs to (tool_spec.is_mcp_server_name) ever has a tool; the config refuses it first."""
    if not is_mcp_server_name(server):
        raise ValueError(f"MCP server name {server!r} may not contain '__' or begin or end with '_'")
    return f"{PREFIX}{server}__{tool}"


def server_of(tool_name: str) -> str | None:
    """The server of an MCP tool's name (mcp__SERVER__TOOL), or None for any other name. The first
    `__` ends the server's part because no server name holds one or ends in `_` (mcp_tool_name)."""
    if not tool_name.startswith(PREFIX):
        return None
    server, sep, tool = tool_name[len(PREFIX):].partition("__")
    return server if sep and tool and is_mcp_server_name(server) else None


class McpTool(Tool):
    """See module docstring. Instances carry what the class attributes carry for built-in tools."""
    checks_input = False

    def __init__(self, server: str, tool: str, description: str, input_schema: dict[str, Any], call: Call,
                 local: str | None = None) -> None:
        """`tool`: the name the server knows it by; `local`: that name as the API accepts it in
        mcp__SERVER__TOOL (characters other than letters, digits, - and _ as _), when it differs."""
        self.name = mcp_tool_name(server, local or tool)
        self.server, self.remote_name = server, tool
        text = description or f"The {tool} tool of the {server} MCP server."
        self.description = text if len(text) <= MAX_DESCRIPTION else text[:MAX_DESCRIPTION - 1] + "…"
        schema = dict(input_schema) if isinstance(input_schema, dict) else {}
        schema.setdefault("type", "object")
        self.input_schema = schema
        self._call = call

    async def run(self, input: dict, ctx: ToolContext) -> ToolOutput:  # noqa: A002 (API name)
        text, is_error = await self._call(self.remote_name, input)
        return ToolOutput(text, is_error=is_error, meta={"mcp_server": self.server})
