"""A real MCP server built with the `mcp` SDK for the sandbox tests: `peek` reads a file, `poke`
writes one, `pids` counts the processes it can see, `count.files` (a dotted name) counts a
folder's entries; each answers with what happened, so a test
can tell what the server was allowed to do."""
import os
from pathlib import Path

from mcp.server.mcpserver import MCPServer

app = MCPServer("peek")


@app.tool()
def peek(path: str) -> str:
    """The text of a file, or why it could not be read."""
    try:
        return Path(path).read_text()
    except OSError as e:
        return f"cannot read: {e.strerror}"


@app.tool()
def poke(path: str) -> str:
    """Write 'poked' to a file; says whether it worked."""
    try:
        Path(path).write_text("poked\n")
        return "written"
    except OSError as e:
        return f"cannot write: {e.strerror}"


@app.tool()
def pids() -> str:
    """How many processes this server can see in /proc."""
    return str(sum(1 for p in os.listdir("/proc") if p.isdigit()))


@app.tool(name="count.files")
def count_files(path: str) -> str:
    """How many entries a folder has (a dotted name, which the API's tool names do not allow)."""
    return str(len(os.listdir(path)))


if __name__ == "__main__":
    app.run("stdio")
