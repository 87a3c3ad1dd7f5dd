"""MCP servers for tests, built with the `mcp` SDK: the stdio calculator (tests/mcp_servers) as a
config file, and a streamable HTTP server on a loopback port in a thread."""
from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Iterator

CALC = Path(__file__).resolve().parent / "mcp_servers" / "calc_server.py"


def calc_config(folder: Path, mode: str = "ok", name: str = "calc", **extra) -> tuple[Path, Path]:
    """(config file, pid file) for the calculator over stdio in `mode`."""
    pid = folder / f"{name}.pid"
    spec = {"command": sys.executable, "args": [str(CALC), str(pid), mode], **extra}
    path = folder / f"mcp-{name}.json"
    path.write_text(json.dumps({"mcpServers": {name: spec}}))
    return path, pid


def gone(pid_file: Path, timeout: float = 10.0) -> bool:
    """Whether the process whose pid the file holds has ended (waited for up to `timeout`)."""
    pid = int(pid_file.read_text())
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        time.sleep(0.05)
    return False


@contextlib.contextmanager
def http_server(token: str = "t0ken") -> Iterator[str]:
    """A streamable HTTP MCP server (tools: add, whoami) that refuses requests without
    `Authorization: Bearer TOKEN`; yields its URL."""
    import uvicorn
    from mcp.server.mcpserver import MCPServer
    from starlette.responses import PlainTextResponse

    server = MCPServer("remote")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two whole numbers."""
        return a + b

    app = server.streamable_http_app()

    async def guarded(scope, receive, send):
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            if headers.get(b"authorization") != f"Bearer {token}".encode():
                await PlainTextResponse("no token", status_code=401)(scope, receive, send)
                return
        await app(scope, receive, send)

    config = uvicorn.Config(guarded, host="127.0.0.1", port=0, log_level="error", lifespan="on")
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    end = time.monotonic() + 20
    while not srv.started and time.monotonic() < end:
        time.sleep(0.02)
    port = srv.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        srv.should_exit = True
        thread.join(10)
