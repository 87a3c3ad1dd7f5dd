"""`ctxtui acp` at the wire: stdout carries nothing but JSON-RPC, a bad request is a JSON-RPC error
(never a crash), a line that is not JSON is skipped. Spoken to as raw lines, on the demo model."""
from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from pathlib import Path

from agent_core.sessions.session_reader import load_session
from tests.agent_helpers import make_workspace
from tests.app.acp.acp_helpers import ROOT, TIMEOUT, log_of, spawn_env


class Wire:
    """`ctxtui acp` as a subprocess spoken to in raw lines; every stdout line must parse as JSON."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc, self.seen = proc, []

    @classmethod
    async def start(cls) -> "Wire":
        return cls(await asyncio.create_subprocess_exec(
            sys.executable, "-m", "app.cli", "acp", cwd=str(ROOT), env=spawn_env(), stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE))

    async def send(self, *lines: str) -> None:
        self.proc.stdin.write("".join(x + "\n" for x in lines).encode())
        await self.proc.stdin.drain()

    async def answer(self, id_: int) -> dict:
        """The answer to request `id_`, read until it comes (requests run concurrently: answers may come
        in any order; everything read is kept in `seen`)."""
        while True:
            if (found := next((m for m in self.seen if m.get("id") == id_ and "method" not in m), None)):
                return found
            raw = await asyncio.wait_for(self.proc.stdout.readline(), TIMEOUT)
            assert raw, "stdout closed early"
            message = json.loads(raw)
            self.seen.append(message)
            if message.get("method") == "session/request_permission":      # the editor says no
                await self.send(json.dumps({"jsonrpc": "2.0", "id": message["id"],
                                            "result": {"outcome": {"outcome": "cancelled"}}}))

    async def close(self) -> tuple[int, bytes]:
        self.proc.stdin.close()
        try:
            rest, err = await asyncio.wait_for(self.proc.communicate(), TIMEOUT)
        finally:
            if self.proc.returncode is None:
                self.proc.kill()
                await self.proc.wait()
        self.seen += [json.loads(line) for line in rest.splitlines() if line.strip()]
        return self.proc.returncode, err


def _request(id_: int, method: str, params: dict) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": id_, "method": method, "params": params})


async def test_bad_requests_get_json_rpc_errors_and_the_agent_keeps_serving(tmp_path):
    ws = str(make_workspace(tmp_path))
    wire = await Wire.start()
    await wire.send(_request(0, "initialize", {"protocolVersion": 1}), "this line is not JSON {",
                    _request(1, "session/new", {"cwd": ws, "mcpServers": []}))
    assert (await wire.answer(0))["result"]["agentInfo"]["name"] == "ctxtui"
    sid = (await wire.answer(1))["result"]["sessionId"]
    await wire.send(_request(2, "session/nonsense", {}),
                    _request(3, "session/prompt", {"sessionId": "no-such-session",
                                                   "prompt": [{"type": "text", "text": "x"}]}),
                    _request(4, "session/new", {"cwd": "relative/path", "mcpServers": []}),
                    _request(5, "session/new", {"cwd": 42}),
                    _request(9, "session/new", {"cwd": ws + "/no-such-folder", "mcpServers": []}),
                    _request(6, "session/load", {"cwd": ws, "sessionId": "../../etc/passwd", "mcpServers": []}),
                    _request(7, "session/load", {"cwd": ws, "sessionId": sid, "mcpServers": []}),
                    _request(8, "session/prompt", {"sessionId": sid, "prompt": [{"type": "image", "data": "AA==",
                                                                                 "mimeType": "image/png"}]}))
    assert (await wire.answer(2))["error"]["code"] == -32601                        # method not found
    error = (await wire.answer(3))["error"]
    assert error["code"] == -32602 and "no-such-session" in error["data"]["details"]
    error = (await wire.answer(4))["error"]
    assert error["code"] == -32602 and "absolute" in error["data"]["details"]
    assert (await wire.answer(5))["error"]["code"] == -32602                        # the SDK's schema check
    assert "absolute path of a folder" in (await wire.answer(9))["error"]["data"]["details"]
    error = (await wire.answer(6))["error"]
    assert error["code"] == -32602 and "not a session id" in error["data"]["details"]
    assert (await wire.answer(7))["result"] == {}     # open here: nothing said yet, nothing to replay
    error = (await wire.answer(8))["error"]
    assert error["code"] == -32602 and "text prompts" in error["data"]["details"]
    code, err = await wire.close()
    assert code == 0, err.decode(errors="replace")[-2000:]


async def test_a_prompt_over_the_wire_streams_updates_then_answers_and_sigterm_closes_the_session(tmp_path):
    ws = str(make_workspace(tmp_path))
    wire = await Wire.start()
    await wire.send(_request(0, "initialize", {"protocolVersion": 1}),
                    _request(1, "session/new", {"cwd": ws, "mcpServers": []}))
    sid = (await wire.answer(1))["result"]["sessionId"]
    await wire.send(_request(2, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "hello"}]}))
    assert (await wire.answer(2))["result"]["stopReason"] == "end_turn"
    updates = [m["params"]["update"] for m in wire.seen if m.get("method") == "session/update"]
    first_update = next(i for i, m in enumerate(wire.seen) if m.get("method") == "session/update")
    assert wire.seen.index(next(m for m in wire.seen if m.get("id") == 1)) < first_update   # the id comes first
    assert all(m["params"]["sessionId"] == sid for m in wire.seen if m.get("method") == "session/update")
    usage = [u for u in updates if u["sessionUpdate"] == "usage_update"][-1]
    assert usage["used"] > 0 and usage["size"] > 0 and usage["cost"]["currency"] == "USD"
    assert usage["_meta"]["ctxtui"]["threshold"] > 0
    assert any(u["sessionUpdate"] == "agent_message_chunk" for u in updates)
    wire.proc.send_signal(signal.SIGTERM)       # how an editor stops its agent: the sessions close whole
    assert await asyncio.wait_for(wire.proc.wait(), TIMEOUT) == 128 + signal.SIGTERM
    log = log_of(Path(ws), sid)
    assert load_session(log).entries and log.read_bytes().endswith(b"\n")


def test_nothing_but_the_protocol_reaches_stdout():
    """After take_stdio, a stray print and a child process that inherited fd 1 both land on stderr,
    and no child can read the client's messages from fd 0."""
    code = ("import os\n"
            "from app.acp.stdio import take_stdio\n"
            "proto_in, proto_out = take_stdio()\n"
            "print('stray print')\n"
            "os.system('echo child output; read x && echo child read $x')\n"
            "proto_out.write(b'{\"jsonrpc\": \"2.0\"}\\n')\n"
            "assert proto_in.read() == b'for the protocol\\n'\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=str(ROOT), env=spawn_env(), capture_output=True,
                          input=b"for the protocol\n", timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b'{"jsonrpc": "2.0"}\n'
    assert b"stray print" in proc.stderr and b"child output" in proc.stderr and b"child read" not in proc.stderr


async def test_a_line_that_is_json_but_not_an_object_is_an_invalid_request_and_the_agent_goes_on():
    """`[]`, `42`, `"str"`, `null`: JSON-RPC 2.0's Invalid Request (id null) for each, even the last
    line of the input with no newline; `null` is not the end of the input."""
    wire = await Wire.start()
    await wire.send("[]", "42", '"str"', "null", "[1, 2]", _request(0, "initialize", {"protocolVersion": 1}))
    assert (await wire.answer(0))["result"]["agentInfo"]["name"] == "ctxtui"
    refused = [m for m in wire.seen if m.get("id", 0) is None]
    assert [m["error"]["code"] for m in refused] == [-32600] * 5
    assert "an array" in refused[0]["error"]["data"]["details"]
    wire.proc.stdin.write(b"true")            # the last line, with no newline
    code, err = await wire.close()
    assert code == 0, err.decode(errors="replace")[-2000:]
    assert [m["error"]["code"] for m in wire.seen if m.get("id", 0) is None] == [-32600] * 6


async def test_an_id_that_is_an_array_or_an_object_is_an_invalid_request_and_the_agent_goes_on():
    """The SDK keys the requests it waits on by id: a response whose id is `[]` or `{}` raised
    TypeError (unhashable) in its receive loop and ended the connection. A string holding `"id": [`
    is no such id and passes."""
    wire = await Wire.start()
    await wire.send('{"jsonrpc": "2.0", "id": [], "result": 1}', '{"jsonrpc": "2.0", "id": {"a": 1}, "result": 1}',
                    _request(0, "initialize", {"protocolVersion": 1, "clientInfo": {"name": 'x "id": [1]'}}))
    assert (await wire.answer(0))["result"]["agentInfo"]["name"] == "ctxtui"
    refused = [m for m in wire.seen if m.get("id", 0) is None]
    assert [m["error"]["code"] for m in refused] == [-32600] * 2
    assert "id is an array" in refused[0]["error"]["data"]["details"]
    code, err = await wire.close()
    assert code == 0, err.decode(errors="replace")[-2000:]
