"""The tool registry: what the model is offered, and the one place a call is executed. `execute`
never raises (except cancellation, which the loop must see): an unknown tool, bad input, a crash
or a call past its deadline becomes an `is_error` result that says what went wrong and what to do.
Every result's text passes through the scrubber here, so no tool hands a secret to the model."""
from __future__ import annotations

import asyncio
from typing import Iterable

from compaction.scrub import scrub

from agent_core.tool_spec import TOOL_NAMES
from agent_core.tools.base import Tool, ToolContext, ToolError, ToolOutput, check_input
from agent_core.tools.bash import BashTool
from agent_core.tools.compact import CompactTool
from agent_core.tools.context_status import ContextStatusTool
from agent_core.tools.edit_file import EditFileTool
from agent_core.tools.glob_tool import GlobTool
from agent_core.tools.grep import GrepTool
from agent_core.tools.read_file import ReadFileTool
from agent_core.tools.write_file import WriteFileTool

BUILTIN_TOOLS: tuple[type[Tool], ...] = (BashTool, ReadFileTool, WriteFileTool, EditFileTool, GlobTool,
                                         GrepTool, CompactTool, ContextStatusTool)
if tuple(t.name for t in BUILTIN_TOOLS) != TOOL_NAMES:  # tool_spec is the shared source of names
    raise ImportError(f"built-in tools {[t.name for t in BUILTIN_TOOLS]} differ from tool_spec.TOOL_NAMES")


class ToolRegistry:
    def __init__(self, tools: Iterable[Tool] | None = None) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in (tools if tools is not None else (cls() for cls in BUILTIN_TOOLS)):
            if tool.name in self._tools:
                raise ValueError(f"two tools are named {tool.name!r}")
            self._tools[tool.name] = tool

    def add(self, tool: Tool) -> None:
        """A tool found after start (an MCP server's), offered after the built-in ones."""
        if tool.name in self._tools:
            raise ValueError(f"two tools are named {tool.name!r}")
        self._tools[tool.name] = tool

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def definitions(self, only: Iterable[str] | None = None) -> list[dict]:
        """Messages-API tool definitions, in registration order (stable, so the prompt cache holds)."""
        keep = None if only is None else set(only)
        return [t.definition() for n, t in self._tools.items() if keep is None or n in keep]

    async def execute(self, name: str, input: dict, ctx: ToolContext) -> ToolOutput:  # noqa: A002
        out = await self._execute(name, input, ctx)
        out.content = scrub(out.content)
        return out

    async def _execute(self, name: str, input: dict, ctx: ToolContext) -> ToolOutput:  # noqa: A002
        tool = self._tools.get(name)
        if tool is None:
            return ToolOutput(f"Unknown tool '{name}'. Available tools: {', '.join(self._tools)}.",
                              is_error=True, meta={"error": "unknown_tool"})
        problems = check_input(tool.input_schema, input, name) if tool.checks_input else []
        if problems:
            return ToolOutput(f"Invalid input for {name}: {'; '.join(problems)}. "
                              f"Fix the call to match the tool's input schema and retry.",
                              is_error=True, meta={"error": "bad_input"})
        try:
            return await _run_with_deadline(tool, input, ctx)
        except asyncio.CancelledError:
            raise
        except ToolError as e:
            return ToolOutput(f"Error: {e}", is_error=True, meta={"error": "tool"})
        except OSError as e:
            where = f" ({e.filename})" if e.filename else ""
            return ToolOutput(f"Error: {name} failed: {e.strerror or e}{where}. Check the path and its "
                              f"permissions, then retry.", is_error=True, meta={"error": "os"})
        except Exception as e:  # noqa: BLE001 — a tool bug must not end the session
            return ToolOutput(f"Error: {name} failed unexpectedly ({type(e).__name__}: {e}). "
                              f"Try a different approach or report this.", is_error=True,
                              meta={"error": "internal"})


async def _run_with_deadline(tool: Tool, input: dict, ctx: ToolContext) -> ToolOutput:  # noqa: A002
    """Run the tool, stopped after ctx.tool_timeout: the cancellation sets the stop event its
    thread checks, so the work ends too, not just the wait."""
    if tool.own_deadline:
        return await tool.run(input, ctx)
    deadline = asyncio.timeout(ctx.tool_timeout)
    try:
        async with deadline:
            return await tool.run(input, ctx)
    except TimeoutError:
        if not deadline.expired():
            raise                     # an OSError (ETIMEDOUT) of the tool's own
        return ToolOutput(f"Error: {tool.name} timed out after {ctx.tool_timeout:g} s and was stopped. "
                          f"Narrow the call (a smaller path, a more specific pattern or glob, offset/limit) "
                          f"and retry.", is_error=True, meta={"error": "timeout"})
