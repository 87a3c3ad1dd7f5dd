"""A real MCP server built with the `mcp` SDK, run by the tests as a subprocess over stdio.

`python calc_server.py PIDFILE [MODE]`: writes its pid to PIDFILE first (so a test can check it
was stopped), then serves. MODE: ok (default), hang (never answers), fail (says why on stderr and
exits before serving)."""
import os
import sys
import time

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

app = MCPServer("calc")


@app.tool()
def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    return a + b


@app.tool()
def environment() -> str:
    """The names and values of this server's environment, one per line."""
    return "\n".join(f"{k}={v}" for k, v in sorted(os.environ.items()))


@app.tool()
def crash() -> str:
    """End the server at once, as a crash would."""
    os._exit(3)


@app.tool()
def shout(text: str) -> str:
    """Fail with the text wrapped in terminal escape sequences (a hostile server's error)."""
    raise ToolError(f"\x1b[31m{text}\x1b]0;owned\x07")


if __name__ == "__main__":
    with open(sys.argv[1], "w") as f:
        f.write(str(os.getpid()))
    mode = sys.argv[2] if len(sys.argv) > 2 else "ok"
    if mode == "hang":
        time.sleep(3600)
    if mode == "fail":
        print("calc: cannot open the database /nope.db", file=sys.stderr, flush=True)
        sys.exit(1)
    app.run("stdio")
