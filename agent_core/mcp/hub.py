"""Every MCP server of a session: started together at the session's start, their tools offered
to the model, stopped on exit. A server that fails to start, hangs or dies is a notice and the
session goes on without it; its tools answer with an error result saying so.

Loaded only when servers are configured: the SDK takes about half a second to import."""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from agent_core.mcp.connection import McpCallError, McpResultTooLarge, ServerConnection
from agent_core.mcp.servers_config import ServerSpec, tool_name_part
from agent_core.mcp.limits import MAX_MESSAGE, STDERR_HEAD
from agent_core.security.visible_text import one_line
from agent_core.tools.mcp_tool import MAX_NAME, McpTool, mcp_tool_name

if TYPE_CHECKING:
    from agent_core.os_sandbox.sandbox import OsSandbox

START_TIMEOUT = 30.0


@dataclass(frozen=True)
class ServerStatus:
    """One server as /mcp and the context breakdown show it."""
    name: str
    state: str            # connected | failed | died | stopped | starting
    tools: tuple[str, ...]
    error: str
    describe: str


class McpHub:
    def __init__(self, specs: list[ServerSpec], *, log_dir: Path | None = None, cwd: Path | None = None,
                 start_timeout: float = START_TIMEOUT, max_message: int = MAX_MESSAGE,
                 stderr_cap: int = STDERR_HEAD, os_sandbox: OsSandbox | None = None) -> None:
        self.connections = [ServerConnection(s, stderr_path=self._log_path(log_dir, s.name), cwd=cwd,
                                             max_message=max_message, stderr_cap=stderr_cap, os_sandbox=os_sandbox)
                            for s in specs]
        self.start_timeout = start_timeout
        self.on_death: Callable[[str], object] | None = None   # called with a notice when a server dies
        self._tools: list[McpTool] = []
        self._started = False

    @staticmethod
    def _log_path(log_dir: Path | None, name: str) -> Path | None:
        return None if log_dir is None else log_dir / f"mcp-{name}.stderr"

    async def start(self) -> list[str]:
        """Start every server at once; the notices to show (one per server: its tools, or why not)."""
        if self._started:
            return []
        self._started = True
        for c in self.connections:
            if c.stderr_path is not None:
                c.stderr_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            c.on_death = self._died
        await asyncio.gather(*(c.start(self.start_timeout) for c in self.connections))
        notices = []
        for c in self.connections:
            if c.state != "connected":
                notices.append(f"MCP server {c.spec.name} did not start ({c.spec.describe()}): {c.error}. "
                               f"The session goes on without it; its tools are not offered.")
                continue
            offered, skipped = self._offer(c)
            note = f"MCP server {c.spec.name}: {len(offered)} tool{'s' * (len(offered) != 1)}"
            if skipped:
                note += (f" ({len(skipped)} left out: a name empty, repeated or longer than {MAX_NAME} characters "
                         f"with the prefix)")
            notices.append(note)
        return notices

    def _offer(self, c: ServerConnection) -> tuple[list[McpTool], list[str]]:
        offered, skipped, seen = [], [], set()
        for t in c.tools:
            local = tool_name_part(str(t.get("name", "")))
            name = mcp_tool_name(c.spec.name, local)
            if len(name) > MAX_NAME or name in seen or not t.get("name"):
                skipped.append(one_line(str(t.get("name", ""))))
                continue
            seen.add(name)
            offered.append(McpTool(c.spec.name, str(t["name"]), str(t.get("description") or ""),
                                   t.get("input_schema") or {}, self._caller(c), local=local))
        self._tools += offered
        return offered, skipped

    @staticmethod
    def _caller(c: ServerConnection):
        async def call(tool: str, arguments: dict) -> tuple[str, bool]:
            try:
                return await c.call(tool, arguments)
            except McpResultTooLarge as e:
                return f"Error: {e}.", True     # the tool works: a smaller request is the way on
            except McpCallError as e:
                return f"Error: {e}. Do not retry this tool; continue without it or tell the user.", True
        return call

    def _died(self, c: ServerConnection) -> None:
        if callable(self.on_death):
            self.on_death(f"MCP server {c.spec.name} stopped answering: {c.error}. Its tools now return an error.")

    @property
    def tools(self) -> list[McpTool]:
        return list(self._tools)

    def status(self) -> list[ServerStatus]:
        return [ServerStatus(c.spec.name, c.state, tuple(t.name for t in self._tools if t.server == c.spec.name),
                             c.error, c.spec.describe()) for c in self.connections]

    async def stop(self) -> None:
        """Stop every server (at exit): closed gracefully, then terminated, then killed."""
        await asyncio.gather(*(c.stop() for c in self.connections), return_exceptions=True)
