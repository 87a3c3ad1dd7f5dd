"""What an MCP server can make ctxtui hold: one message (a tool's result), and a stdio server's
stderr file.

One message over stdio. The SDK reads the server's stdout through anyio's TextReceiveStream, which decodes
with the codec StdioServerParameters.encoding names, then joins and splits lines and parses each
line whole: a 100 MB tool result was held in several copies at once (754 MB RSS). The codec is the
one public seam before that, so stdout is decoded by `ctxtui_mcp_lines`: UTF-8 handed on a whole
line at a time, a line over the cap dropped as it streams (its size, head and tail kept) and
replaced by a JSON-RPC error answering the request it was for. Spawning, framing, parsing and
shutdown stay the SDK's. The codec finds its cap and the requests in flight in a context variable
that `capped_stdio` sets: the SDK's reader task is started inside it and inherits it.

One message over HTTP. The SDK reads a JSON answer's body whole (an event stream it caps itself,
1 MiB an event); a response hook wraps the body so that reading past the cap raises the StreamError
the SDK already turns into an error answering the call.

Stderr. The server writes into a pipe; a thread copies the first `head` bytes into the 0600 file
as they come, then keeps only the newest bytes, written after a note when the server's stderr
closes, so a server that logs without end fills neither the disk nor memory."""
from __future__ import annotations

import asyncio
import codecs
import contextlib
import contextvars
import json
import os
import re
import threading
import time
from pathlib import Path
from typing import Any, AsyncIterator

import httpx2
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, JSONRPCError, JSONRPCRequest, JSONRPCResponse

CODEC = "ctxtui_mcp_lines"
MAX_MESSAGE = 8 << 20          # bytes of one message from a server (a tool's result, its tool list)
STDERR_HEAD = 1 << 20          # bytes of a server's stderr written as they come
STDERR_TAIL = 64 << 10         # then the newest this many, written when its stderr closes
OVER_CAP = "ctxtui_over_cap"   # the refusal's data: the message's size in bytes
_KEEP = 2048                   # bytes of an oversized line's head and of its tail, to find its id
_ID = rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.){0,200}")'
_HEAD_ID = re.compile(rb'\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?' + _ID)      # {"jsonrpc":"2.0","id":3,...
_TAIL_ID = re.compile(_ID + rb'\s*(?:,\s*"jsonrpc"\s*:\s*"2\.0"\s*)?\}\s*$')    # ...,"jsonrpc":"2.0","id":3}


class LineCap:
    """One connection's cap on a message, and the ids of its requests still unanswered."""

    def __init__(self, cap: int = MAX_MESSAGE) -> None:
        self.cap = cap
        self.pending: set[int | str] = set()

    def refusal(self, size: int, head: bytes, tail: bytes) -> str:
        """The line that stands for an oversized one: an error answering its request ('' when it
        answers none of ours: a notification, or a request of the server's)."""
        rid = self._request_id(head, tail)
        if rid is None:
            return ""
        message = (f"the server's result was {size:,} bytes, over ctxtui's cap of {self.cap:,} bytes, and was not "
                   f"read; ask for less")
        return json.dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": INTERNAL_ERROR, "message": message,
                                                                  "data": {OVER_CAP: size, "cap": self.cap}}}) + "\n"

    def _request_id(self, head: bytes, tail: bytes) -> int | str | None:
        for m in (_HEAD_ID.match(head), _TAIL_ID.search(tail)):
            with contextlib.suppress(ValueError):
                rid: int | str | None = json.loads(m.group(1)) if m else None
                if rid is not None and rid in self.pending:
                    return rid
        return next(iter(self.pending)) if len(self.pending) == 1 else None


_current: contextvars.ContextVar[LineCap | None] = contextvars.ContextVar("ctxtui_mcp_line_cap", default=None)


class CappedLineDecoder(codecs.IncrementalDecoder):
    """UTF-8, a whole line at a time (the SDK's buffer never holds a part line); a line over the
    cap is counted, not kept, and replaced by `LineCap.refusal`."""

    def __init__(self, errors: str = "strict") -> None:
        super().__init__(errors)
        self.limits = _current.get() or LineCap()
        self.reset()

    def reset(self) -> None:
        self._line = bytearray()
        self._size = 0                 # > 0: the line is over the cap; its bytes so far
        self._head, self._tail = b"", bytearray()

    def decode(self, input: Any, final: bool = False) -> str:  # noqa: A002 (codecs' name)
        data, out, start = bytes(input), [], 0
        while (end := data.find(b"\n", start)) >= 0:
            self._take(data[start:end])
            out.append(self._finish())
            start = end + 1
        self._take(data[start:])
        if final:
            self.reset()               # a last line without its newline: the SDK drops it too
        return "".join(out)

    def _take(self, piece: bytes) -> None:
        if self._size:
            self._size += len(piece)
            self._tail += piece
            del self._tail[:-_KEEP]
        elif len(self._line) + len(piece) <= self.limits.cap:
            self._line += piece
        else:
            self._size = len(self._line) + len(piece)
            self._head = bytes(self._line[:_KEEP] + piece[:_KEEP])[:_KEEP]
            self._tail = bytearray((self._line[-_KEEP:] + piece)[-_KEEP:])
            self._line = bytearray()

    def _finish(self) -> str:
        line = (self.limits.refusal(self._size, self._head, bytes(self._tail)) if self._size
                else self._line.decode("utf-8", self.errors) + "\n")
        self.reset()
        return line


def _search(name: str) -> codecs.CodecInfo | None:
    if name != CODEC:
        return None
    return codecs.CodecInfo(codecs.utf_8_encode, codecs.utf_8_decode, name=CODEC,
                            incrementalencoder=codecs.getincrementalencoder("utf-8"),
                            incrementaldecoder=CappedLineDecoder)


codecs.register(_search)


class _Wrapped:
    """One of the SDK's streams, with the set of requests still waiting for an answer; everything
    it does not override passes through to the stream."""

    def __init__(self, stream: Any, pending: set[Any]) -> None:
        self._stream, self._pending = stream, pending

    async def __aenter__(self) -> Any:
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._stream.__aexit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _Sent(_Wrapped):
    """The write stream, noting each request's id before it goes (its answer may be refused)."""

    async def send(self, item: Any) -> None:
        message = getattr(item, "message", None)
        if isinstance(message, JSONRPCRequest):
            self._pending.add(message.id)
        await self._stream.send(item)


class _Received(_Wrapped):
    """The read stream, forgetting each request once it is answered."""

    def _seen(self, item: Any) -> Any:
        message = getattr(item, "message", None)
        if isinstance(message, (JSONRPCResponse, JSONRPCError)):
            self._pending.discard(message.id)
        return item

    async def receive(self) -> Any:
        return self._seen(await self._stream.receive())

    def __aiter__(self) -> _Received:
        return self

    async def __anext__(self) -> Any:
        return self._seen(await self._stream.__anext__())


@contextlib.asynccontextmanager
async def capped_stdio(params: StdioServerParameters, errlog: Any, cap: int = MAX_MESSAGE) -> AsyncIterator[Any]:
    """The SDK's stdio transport with its stdout decoded by `ctxtui_mcp_lines` under `cap`."""
    limits = LineCap(cap)
    token = _current.set(limits)
    try:
        async with stdio_client(params.model_copy(update={"encoding": CODEC}), errlog=errlog) as (read, write):
            yield _Received(read, limits.pending), _Sent(write, limits.pending)
    finally:
        with contextlib.suppress(ValueError):
            _current.reset(token)


class BodyTooLarge(httpx2.StreamError):
    """An HTTP answer read past the cap (the SDK answers the call with this message)."""


class _CappedBody(httpx2.AsyncByteStream):
    def __init__(self, stream: Any, cap: int) -> None:
        self._stream, self._cap = stream, cap

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self._stream:
            seen += len(chunk)
            if seen > self._cap:
                raise BodyTooLarge(f"the server's result was more than {self._cap:,} bytes, over ctxtui's cap of "
                                   f"{self._cap:,} bytes, and was not read; ask for less [{OVER_CAP}]")
            yield chunk

    async def aclose(self) -> None:
        await self._stream.aclose()


def cap_json_bodies(client: httpx2.AsyncClient, cap: int = MAX_MESSAGE) -> httpx2.AsyncClient:
    """`client` with every JSON answer's body capped as it is read (event streams are the SDK's)."""
    async def hook(response: httpx2.Response) -> None:
        if response.headers.get("content-type", "").lower().startswith("application/json"):
            response.stream = _CappedBody(response.stream, cap)
    client.event_hooks = {**client.event_hooks, "response": [*client.event_hooks.get("response", []), hook]}
    return client


_HTTP_OVER = re.compile(r"over ctxtui's cap of ([\d,]+) bytes.*\[" + OVER_CAP + r"\]")


def over_cap(e: BaseException) -> tuple[str, int] | None:
    """(the result's size in words, the cap) when `e` is a refusal of `LineCap.refusal` or of
    `BodyTooLarge`, else None."""
    if not isinstance(e, MCPError):
        return None
    data = e.data
    if isinstance(data, dict) and isinstance(data.get(OVER_CAP), int) and isinstance(data.get("cap"), int):
        return f"{data[OVER_CAP]:,} bytes", data["cap"]
    if m := _HTTP_OVER.search(e.message or ""):
        return f"more than {m.group(1)} bytes", int(m.group(1).replace(",", ""))
    return None


class StderrFile:
    """A server's stderr: `errlog` (a pipe's end) for the SDK to hand the server; see the module
    docstring. `last_line()` is the newest line it wrote, whatever the file kept."""

    def __init__(self, path: Path, head: int = STDERR_HEAD, tail: int = STDERR_TAIL) -> None:
        self._file = open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), "wb")
        self._written = os.fstat(self._file.fileno()).st_size     # an earlier agent's lines count
        self._head, self._tail = head, tail
        read_end, write_end = os.pipe()
        self.errlog = open(write_end, "w", encoding="utf-8")
        self._recent = b""
        self._thread = threading.Thread(target=self._copy, args=(read_end,), name=f"mcp stderr {path.name}",
                                        daemon=True)
        self._thread.start()

    def _copy(self, fd: int) -> None:
        kept, over = bytearray(), 0
        with contextlib.suppress(OSError):
            while chunk := os.read(fd, 65536):
                self._recent = (self._recent + chunk)[-4096:]
                room = max(0, self._head - self._written)
                if room:
                    self._write(chunk[:room])
                    self._written += min(room, len(chunk))
                if rest := chunk[room:]:
                    over += len(rest)
                    kept += rest
                    del kept[:-self._tail]
        os.close(fd)
        if over > len(kept):               # start the kept part on a whole line
            kept = kept[kept.find(b"\n") + 1:] if b"\n" in kept else kept
            self._write(f"\n[ctxtui: {over - len(kept):,} bytes of this server's stderr were left out here (the file "
                        f"keeps the first {self._head:,} and the newest {len(kept):,})]\n".encode())
        self._write(bytes(kept))
        with contextlib.suppress(OSError):
            self._file.close()

    def _write(self, data: bytes) -> None:
        """A failed write (a full disk) loses stderr, never the session: no traceback from a thread."""
        with contextlib.suppress(OSError):
            self._file.write(data)
            self._file.flush()

    def last_line(self) -> str:
        lines = [ln for ln in self._recent.decode("utf-8", "replace").splitlines() if ln.strip()]
        return lines[-1] if lines else ""

    async def close(self, wait: float = 0.0) -> None:
        """Close ctxtui's end of the pipe; wait up to `wait` seconds for the server's end to close
        too (a server that has exited), so `last_line` holds its last words."""
        self.errlog.close()
        end = time.monotonic() + wait
        while self._thread.is_alive() and time.monotonic() < end:
            await asyncio.sleep(0.01)
