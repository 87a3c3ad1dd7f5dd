"""What a stdio MCP server can make ctxtui hold (attacker review): one message is capped as it
streams (a 100 MB tool result peaked at 754 MB RSS) and answered with an error that says to ask
for less; the stderr file keeps its head and newest tail. Against a real `mcp` SDK server."""
from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest

from agent_core.mcp.hub import McpHub
from agent_core.mcp.servers_config import parse_server
from agent_core.mcp.limits import MAX_MESSAGE, STDERR_HEAD, STDERR_TAIL, LineCap

HEAVY = Path(__file__).resolve().parents[2] / "mcp_servers" / "heavy_server.py"
ROOT = Path(__file__).resolve().parents[3]


def _hub(tmp_path: Path, *args: str, **limits) -> McpHub:
    spec = parse_server("heavy", {"command": sys.executable, "args": [str(HEAVY), *args]}, "test", {})
    return McpHub([spec], log_dir=tmp_path / "session", start_timeout=20, **limits)


def _tool(hub: McpHub, name: str):
    return next(t for t in hub.tools if t.name == f"mcp__heavy__{name}")


async def test_a_result_over_the_cap_is_an_error_that_says_to_ask_for_less_and_the_server_goes_on(tmp_path):
    hub = _hub(tmp_path, "ok")
    try:
        assert await hub.start() == ["MCP server heavy: 2 tools"]
        blob = _tool(hub, "blob")
        big, small = await asyncio.gather(blob.run({"size": MAX_MESSAGE + 1}, None), blob.run({"size": 5}, None))
        assert small.content == "xxxxx" and not small.is_error       # the answer in flight beside it is its own
        assert big.is_error
        assert "the result of blob was" in big.content and f"over ctxtui's cap of {MAX_MESSAGE:,} bytes" in big.content
        assert "ask for less" in big.content and "Do not retry" not in big.content
        size = int(big.content.split(" was ")[1].split(" bytes")[0].replace(",", ""))
        assert size > MAX_MESSAGE                                       # the whole message was counted
        again = await blob.run({"size": 3}, None)
        assert again.content == "xxx" and hub.status()[0].state == "connected"
    finally:
        await hub.stop()


async def test_a_lowered_cap_applies_and_a_message_under_it_passes_whole(tmp_path):
    hub = _hub(tmp_path, "ok", max_message=64 << 10)
    try:
        await hub.start()
        blob = _tool(hub, "blob")
        assert (await blob.run({"size": 20_000}, None)).content == "x" * 20_000
        refused = await blob.run({"size": 70_000}, None)
        assert refused.is_error and "over ctxtui's cap of 65,536 bytes" in refused.content
    finally:
        await hub.stop()


@contextlib.contextmanager
def _json_http_server() -> Iterator[str]:
    """A streamable HTTP MCP server (the `mcp` SDK) that answers with JSON bodies, not event
    streams, with the blob tool; yields its URL."""
    import uvicorn
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("remote")

    @server.tool()
    def blob(size: int) -> str:
        """A text of `size` bytes."""
        return "x" * size

    srv = uvicorn.Server(uvicorn.Config(server.streamable_http_app(json_response=True), host="127.0.0.1", port=0,
                                        log_level="error", lifespan="on"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    end = time.monotonic() + 20
    while not srv.started and time.monotonic() < end:
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{srv.servers[0].sockets[0].getsockname()[1]}/mcp"
    finally:
        srv.should_exit = True
        thread.join(10)


async def test_an_http_json_result_over_the_cap_is_the_same_error_and_the_server_goes_on():
    with _json_http_server() as url:
        hub = McpHub([parse_server("remote", {"type": "http", "url": url}, "test", {})], start_timeout=20,
                     max_message=64 << 10)
        try:
            assert await hub.start() == ["MCP server remote: 1 tool"]
            blob = hub.tools[0]
            refused = await blob.run({"size": 100_000}, None)
            assert refused.is_error and "the result of blob was more than 65,536 bytes" in refused.content
            assert "ask for less" in refused.content and "Do not retry" not in refused.content
            assert (await blob.run({"size": 1_000}, None)).content == "x" * 1_000
        finally:
            await hub.stop()


@pytest.mark.parametrize("line, pending, answers", [
    (b'{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"' + b"x" * 5000 + b'"}]}}', {7, 8}, 7),
    (b'{"result":{"content":[{"type":"text","text":"' + b"x" * 5000 + b'"}]},"jsonrpc":"2.0","id":8}', {7, 8}, 8),
    (b'{"result":{"content":[{"type":"text","text":"' + b"x" * 5000 + b'"}]},"id":"a-1","jsonrpc":"2.0"}', {"a-1", 3},
     "a-1"),
    (b'{"result":"' + b"x" * 5000 + b'","id":9}', {4}, 4),                # an id of no call: the one in flight
    (b'{"jsonrpc":"2.0","method":"notifications/message","params":"' + b"x" * 5000 + b'"}', {4, 5}, None),
])
def test_the_refusal_answers_the_request_the_line_was_for(line, pending, answers):
    """The Python SDK writes the id first, the TypeScript one last: either is found in the head or
    the tail the decoder keeps; a line that answers none of the calls in flight answers nothing."""
    cap = LineCap(1000)
    cap.pending = set(pending)
    got = cap.refusal(len(line), line[:2048], line[-2048:])
    if answers is None:
        assert got == ""
    else:
        sent = json.loads(got)
        assert sent["id"] == answers and sent["error"]["data"]["ctxtui_over_cap"] == len(line)


async def test_a_server_s_stderr_file_keeps_its_head_and_newest_tail(tmp_path):
    hub = _hub(tmp_path, "spam", str(3 * STDERR_HEAD))
    try:
        assert await hub.start() == ["MCP server heavy: 2 tools"]
        assert (await _tool(hub, "blob").run({"size": 2}, None)).content == "xx"
    finally:
        await hub.stop()
    path = tmp_path / "session" / "mcp-heavy.stderr"
    data = path.read_bytes()                       # complete once the hub has stopped
    assert len(data) <= STDERR_HEAD + STDERR_TAIL + 300, len(data)
    assert data.startswith(b"spam line 0 ") and data.endswith(b"the newest line\n")
    assert b"bytes of this server's stderr were left out here" in data
    assert oct(path.stat().st_mode & 0o777) == "0o600"


@pytest.mark.slow
def test_a_100_mb_result_is_refused_within_a_few_mb_of_memory(tmp_path):
    """Peak RSS growth of a process that asks for 50 MB twice over (the SDK server sends the text
    and its structured copy: a 100 MB message) with the cap at 1 MiB. Unbounded it peaked at about
    seven times the message."""
    script = textwrap.dedent(f"""
        import asyncio, resource, sys
        sys.path.insert(0, {str(ROOT)!r})
        from agent_core.mcp.hub import McpHub
        from agent_core.mcp.servers_config import parse_server

        async def main():
            spec = parse_server("heavy", {{"command": sys.executable, "args": [{str(HEAVY)!r}, "ok"]}}, "t", {{}})
            hub = McpHub([spec], start_timeout=30, max_message=1 << 20)
            await hub.start()
            blob = next(t for t in hub.tools if t.name == "mcp__heavy__blob")
            await blob.run({{"size": 1000}}, None)
            before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            out = await blob.run({{"size": 50_000_000}}, None)
            after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            await hub.stop()
            print(after - before, out.is_error, out.content[:200])

        asyncio.run(main())
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    grew_kb, is_error, said = proc.stdout.split(" ", 2)
    assert is_error == "True" and "over ctxtui's cap of 1,048,576 bytes" in said
    assert int(grew_kb) < 20_000, f"peak RSS grew {int(grew_kb) // 1024} MB for a refused 100 MB result"
