"""A real MCP server built with the `mcp` SDK, heavy or hostile on purpose, for the tests of what
ctxtui bounds: `python heavy_server.py MODE [ARG...]` over stdio.

MODE ok: serve. spam BYTES: first write about BYTES of numbered lines to stderr, then the line
"the newest line", then serve. fail-echo: write its own arguments to stderr (a server repeating
the token it was handed) and exit before serving."""
import os
import sys

from mcp.server.mcpserver import MCPServer

app = MCPServer("heavy")


@app.tool()
def blob(size: int) -> str:
    """A text of `size` bytes (an oversized answer when size is large)."""
    return "x" * size


@app.tool()
def getenv(name: str) -> str:
    """The value of one of this server's environment variables ('' when it is not set)."""
    return os.environ.get(name, "")


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "ok"
    if mode == "fail-echo":
        print("heavy: refusing to start with " + " ".join(sys.argv[2:]), file=sys.stderr, flush=True)
        sys.exit(1)
    if mode == "spam":
        total, n = int(sys.argv[2]), 0
        while total > 0:
            line = f"spam line {n} " + "." * 90 + "\n"
            sys.stderr.write(line)
            total, n = total - len(line), n + 1
        sys.stderr.write("the newest line\n")
        sys.stderr.flush()
    app.run("stdio")
