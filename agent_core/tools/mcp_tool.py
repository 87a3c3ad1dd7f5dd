"""An MCP server's tool as the model sees it: `mcp__SERVER__TOOL` (Claude Code's naming), its
description and schema as the server lists them, each call passed to the server's connection.

The server validates its own arguments (its schemas need not be the flat ones `check_input`
reads); a server that cannot answer gives an error result saying so, never an exception."""
from __future__ import annotations

from typing import Any, Awaitable, Callable

from agent_core.tools.base import Tool, ToolContext, ToolOutput

PREFIX = "mcp__"
MAX_DESCRIPTION = 2_048        # a server's description is capped: it is sent with every request
MAX_NAME = 64                  # the API's limit on a tool name

Call = Callable[[str, dict], Awaitable[tuple[str, bool]]]


def mcp_tool_name(server: str, tool: str) -> str:
    return f"{PREFIX}{server}__{tool}"


def server_of(tool_name: str) -> str | None:
    """The server part of an MCP tool's name, or None for any other tool."""
    if not tool_name.startswith(PREFIX):
        return None
    server, sep, _tool = tool_name[len(PREFIX):].partition("__")
    return server if sep and server else None


class McpTool(Tool):
    """See module docstring. Instances carry what the class attributes carry for built-in tools."""
    checks_input = False

    def __init__(self, server: str, tool: str, description: str, input_schema: dict[str, Any], call: Call) -> None:
        self.name = mcp_tool_name(server, tool)            # type: ignore[misc]
        self.server, self.remote_name = server, tool
        text = description or f"The {tool} tool of the {server} MCP server."
        self.description = text if len(text) <= MAX_DESCRIPTION else text[:MAX_DESCRIPTION - 1] + "…"  # type: ignore[misc]
        schema = dict(input_schema) if isinstance(input_schema, dict) else {}
        schema.setdefault("type", "object")
        self.input_schema = schema                         # type: ignore[misc]
        self._call = call

    async def run(self, input: dict, ctx: ToolContext) -> ToolOutput:  # noqa: A002 (API name)
        text, is_error = await self._call(self.remote_name, input)
        return ToolOutput(text, is_error=is_error, meta={"mcp_server": self.server})
