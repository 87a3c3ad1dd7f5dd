"""One MCP server's connection, through the official `mcp` SDK (stdio or streamable HTTP).

The SDK's client is a context manager whose task group must be entered and left by one task, so
each server gets a task of its own that connects, lists the tools, then holds the connection open
until it is told to stop; calls from the agent's tasks go through the open session. A server that
dies ends that task, and from then on every call is an error result the model reads.

The server's stderr goes to a 0600 file beside the session, never to the terminal (the TUI owns
it); its last line is quoted, made visible, when the server fails. What a server can make ctxtui
hold — one message, a stdio server's stderr file — is bounded (limits.py). Every error and stderr
line quoted goes through the spec's redaction: they may repeat the server's URL or token.
"""
from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED

from agent_core.mcp.servers_config import ServerSpec
from agent_core.mcp.limits import MAX_MESSAGE, STDERR_HEAD, StderrFile, cap_json_bodies, capped_stdio, over_cap
from agent_core.security.visible_text import one_line

if TYPE_CHECKING:
    from agent_core.os_sandbox.sandbox import OsSandbox

MAX_TOOL_PAGES = 50


class McpCallError(Exception):
    """A call that could not be made or answered; the message is for the model and the user."""


class McpResultTooLarge(McpCallError):
    """The server's answer was over the cap and was not read: the model should ask for less."""


class SandboxUnavailable(RuntimeError):
    """A server to start inside the OS sandbox, which cannot run here."""


def _describe(exc: BaseException) -> str:
    """An exception from the SDK or its transport as one line (groups unwrapped to their first)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc) or type(exc).__name__
    return one_line(f"{type(exc).__name__}: {text}" if type(exc).__name__ not in text else text)[:300]


def result_text(result: Any) -> tuple[str, bool]:
    """A CallToolResult as the text the model reads and whether it is an error: text blocks as
    they are, resource text inlined, anything else named (an image is not sent as text)."""
    parts: list[str] = []
    for block in getattr(result, "content", None) or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(str(block.text))
        elif kind == "resource" and hasattr(getattr(block, "resource", None), "text"):
            parts.append(str(block.resource.text))
        elif kind == "resource_link":
            parts.append(f"[resource: {getattr(block, 'uri', '')}]")
        else:
            mime = getattr(block, "mime_type", None) or getattr(block, "mimeType", None) or ""
            parts.append(f"[{kind or 'content'}{' ' + mime if mime else ''} not shown]")
    structured = getattr(result, "structured_content", None)
    if not parts and structured is not None:
        parts.append(json.dumps(structured, ensure_ascii=False))
    return "\n".join(parts) or "(no output)", bool(getattr(result, "is_error", False))


class ServerConnection:
    """See module docstring. `state`: starting | connected | failed | stopped | died."""

    def __init__(self, spec: ServerSpec, *, stderr_path: Path | None = None, cwd: Path | None = None,
                 max_message: int = MAX_MESSAGE, stderr_cap: int = STDERR_HEAD,
                 os_sandbox: OsSandbox | None = None) -> None:
        self.spec = spec
        self.os_sandbox = os_sandbox         # for a spec with sandbox = true
        self.stderr_path = stderr_path
        self.cwd = cwd
        self.max_message, self.stderr_cap = max_message, stderr_cap
        self._stderr: StderrFile | None = None
        self.state = "starting"
        self.error = ""
        self.tools: list[dict] = []          # {"name", "description", "input_schema"} as the server lists them
        self.instructions = ""
        self._client: Client | None = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._task: asyncio.Task | None = None
        # called with the connection when a connected server dies
        self.on_death: Callable[[ServerConnection], object] | None = None

    def _transport(self, errlog: Any) -> Any:
        if self.spec.transport == "http":
            http = cap_json_bodies(create_mcp_http_client(headers=dict(self.spec.headers) or None), self.max_message)
            return streamable_http_client(self.spec.url, http_client=http)
        argv, env = [self.spec.command, *self.spec.args], dict(self.spec.env)
        if self.spec.sandbox:
            argv, env = self._sandboxed(argv, env)
        params = StdioServerParameters(command=argv[0], args=argv[1:], env=env, cwd=str(self.cwd) if self.cwd else None)
        return capped_stdio(params, errlog, self.max_message)

    def _sandboxed(self, argv: list[str], env: dict[str, str]) -> tuple[list[str], dict[str, str]]:
        """The server's command inside the session's OS sandbox. Its definition asked for it, so a
        sandbox that cannot run refuses the start rather than running it unconfined."""
        sandbox = self.os_sandbox
        found = sandbox.availability() if sandbox is not None else None
        if sandbox is None or found is None or not found.ok:
            why = found.notice() if found is not None else "this session has no OS sandbox"
            raise SandboxUnavailable(f"its definition asks for the OS sandbox, and {why}")
        return sandbox.wrap(argv, env)

    async def start(self, timeout: float) -> bool:
        """Connect and list the tools within `timeout` seconds; False (with `error`) otherwise."""
        self._task = asyncio.create_task(self._run(), name=f"mcp {self.spec.name}")
        try:
            await asyncio.wait_for(self._ready.wait(), timeout)
        except asyncio.TimeoutError:
            self.state, self.error = "failed", f"did not answer within {timeout:g} s"
            await self._end_task()
            return False
        return self.state == "connected"

    async def _run(self) -> None:
        errlog = None
        try:
            if self.spec.transport == "stdio" and self.stderr_path is not None:
                self._stderr = StderrFile(self.stderr_path, head=self.stderr_cap)
                errlog = self._stderr.errlog
            elif self.spec.transport == "stdio":
                errlog = open(os.devnull, "w", encoding="utf-8")
            async with Client(self._transport(errlog), mode="auto") as client:
                self.tools = await self._list_tools(client)
                self.instructions = client.instructions or ""
                self._client, self.state = client, "connected"
                self._ready.set()
                await self._stop.wait()
        except asyncio.CancelledError:
            if self.state == "connected":
                self.state = "stopped"
            raise
        except BaseException as e:  # noqa: BLE001 — a server's failure is reported, never raised into the loop
            why = _describe(e)
            if self.state == "connected":
                self._died(why)
            elif self.state != "died":
                if self._stderr is not None:
                    await self._stderr.close(wait=2.0)   # the server has exited: its last words are in the pipe
                self.state, self.error = "failed", self._with_stderr(why)
        else:
            if self.state == "connected":
                self.state = "stopped"
        finally:
            self._client = None
            self._ready.set()
            if errlog is not None:
                errlog.close()               # ctxtui's end; the server's closes when it exits

    @staticmethod
    async def _list_tools(client: Client) -> list[dict]:
        tools, cursor = [], None
        for _ in range(MAX_TOOL_PAGES):
            page = await client.list_tools(cursor=cursor)
            tools += [{"name": t.name, "description": t.description or "", "input_schema": dict(t.input_schema)}
                      for t in page.tools]
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    async def call(self, tool: str, arguments: dict) -> tuple[str, bool]:
        """The tool's answer as (text, is_error); raises McpCallError when the server cannot answer."""
        client = self._client
        if client is None or self.state != "connected":
            raise McpCallError(f"MCP server {self.spec.name!r} is not running ({self.state}"
                               f"{': ' + self.error if self.error else ''})")
        try:
            result = await client.call_tool(tool, arguments)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001
            if (sizes := over_cap(e)) is not None:
                raise McpResultTooLarge(f"MCP server {self.spec.name!r}: the result of {tool} was {sizes[0]}, "
                                        f"over ctxtui's cap of {sizes[1]:,} bytes, and was not read; ask for less "
                                        f"(a narrower query, a smaller page or range)") from None
            if isinstance(e, MCPError) and e.code == CONNECTION_CLOSED:
                self._died(_describe(e))
            raise McpCallError(f"MCP server {self.spec.name!r} failed on {tool}: "
                               f"{self.spec.redact(_describe(e))}") from None
        return result_text(result)

    def _with_stderr(self, why: str) -> str:
        said = one_line(self._stderr.last_line())[:200] if self._stderr is not None else ""
        return self.spec.redact(f"{why} (its stderr: {said})" if said and said not in why else why)

    def _died(self, why: str) -> None:
        """The connection closed under a call: the server is gone; its task is told to end."""
        if self.state != "connected":
            return
        self.state, self.error = "died", self._with_stderr(why)
        self._stop.set()
        if callable(self.on_death):
            self.on_death(self)

    async def stop(self, timeout: float = 8.0) -> None:
        """Close the session and end the server (the SDK closes stdin, then terminates, then kills)."""
        self._stop.set()
        if self._task is None:
            return
        try:
            await asyncio.wait_for(asyncio.shield(self._task), timeout)
        except (asyncio.TimeoutError, asyncio.CancelledError, Exception):  # noqa: BLE001
            await self._end_task()
        if self._stderr is not None:
            await self._stderr.close(wait=1.0)   # its file complete (the newest lines) before ctxtui exits
        if self.state == "connected":
            self.state = "stopped"

    async def _end_task(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            try:
                await asyncio.wait_for(self._task, 8.0)
            except BaseException:  # noqa: BLE001
                pass
