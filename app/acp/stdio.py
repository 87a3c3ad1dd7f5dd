"""The protocol's own copies of stdin and stdout, so nothing else can write to the channel.

stdout is the protocol: one stray line (a print, a library's warning, a tool's child process that
inherited fd 1) would break the client's parser. So the protocol takes private duplicates of fds 0
and 1, then fd 1 is pointed at stderr and fd 0 at /dev/null: whatever else writes to stdout lands
on stderr, and no child process can read the client's messages.

The SDK reads the input through `Requests`, which answers a line that is JSON but not an object.
"""
from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import sys
import threading
from typing import TYPE_CHECKING, BinaryIO

if TYPE_CHECKING:
    from asyncio.streams import _ReaduntilBuffer    # typeshed's name for what readuntil takes

STREAM_LIMIT = 50 * 1024 * 1024     # one message may hold a large file (the SDK's own default)
OBJECT_START = re.compile(rb"[ \t\r\n]*{")
JSON_KINDS = {list: "an array", str: "a string", int: "a number", float: "a number", bool: "a boolean",
              type(None): "null"}
OVER_LIMIT = "a line over the size limit that does not start with {"
# A key "id" whose value opens an array or an object, outside any string (a quote inside a JSON
# string is escaped): the only lines parsed twice, to find a top-level id the SDK cannot use.
ODD_ID = re.compile(rb'"id"\s*:\s*[\[{]')

log = logging.getLogger("ctxtui.acp")


def take_stdio() -> tuple[BinaryIO, BinaryIO]:
    """(protocol input, protocol output); from now on fd 0 is /dev/null and fd 1 is stderr."""
    sys.stdout.flush()
    proto_in, proto_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    os.dup2(2, 1)
    sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 — lives as long as the process
    sys.stdout = sys.stderr
    return os.fdopen(proto_in, "rb", buffering=0), os.fdopen(proto_out, "wb", buffering=0)


async def streams(proto_in: BinaryIO, proto_out: BinaryIO) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """asyncio streams over the protocol's pipes (what the SDK's connection reads and writes). A
    regular file (`ctxtui acp < requests.jsonl > out`) cannot be polled: it is read by a thread
    and written in place."""
    loop = asyncio.get_running_loop()
    reader = Requests(limit=STREAM_LIMIT)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), proto_in)
    except ValueError:
        threading.Thread(target=_feed, args=(loop, reader, proto_in), daemon=True).start()
    try:
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, proto_out)
    except ValueError:
        transport, protocol = _FileTransport(proto_out), asyncio.streams.FlowControlMixin()
    reader.answers = asyncio.StreamWriter(transport, protocol, None, loop)
    return reader, reader.answers


class Requests(asyncio.StreamReader):
    """The protocol's input, less the lines that are JSON but not an object (`[]`, `42`, `"s"`,
    `null`): the SDK would die on one (and take `null` for the end of the input), so each is
    answered here with JSON-RPC 2.0's Invalid Request, id null, and skipped. A line that starts with
    `{` is the SDK's to parse. The SDK reads a line with readuntil, or one over the limit in parts
    (readexactly, then readuntil for the rest): such a line must start with `{`, else it is dropped
    part by part (never held whole) and answered the same."""

    answers: asyncio.StreamWriter

    def __init__(self, limit: int) -> None:
        super().__init__(limit=limit)
        self._rest: str | None = None     # in a line read in parts: "pass" its rest on, or "drop" it

    async def readexactly(self, n: int) -> bytes:
        data = await super().readexactly(n)
        if self._rest is None:
            self._rest = "pass" if OBJECT_START.match(data) else "drop"
        return b"" if self._rest == "drop" else data

    async def readuntil(self, separator: _ReaduntilBuffer = b"\n") -> bytes:
        while True:
            try:
                line = await super().readuntil(separator)
            except asyncio.IncompleteReadError as end:      # the input's last line, with no newline
                if await self._refused(end.partial):
                    raise asyncio.IncompleteReadError(b"", end.expected) from None
                raise
            if not await self._refused(line):
                return line

    async def _refused(self, line: bytes) -> bool:
        """Answer `line` (or the end of one read in parts) when it is no JSON-RPC object."""
        rest, self._rest = self._rest, None
        if rest == "pass":
            return False
        kind = OVER_LIMIT if rest == "drop" else _not_an_object(line)
        if kind is None:
            return False
        from acp import RequestError  # noqa: PLC0415  (start-up time: loaded by then, in _serve)
        log.warning("a message that is %s: answered Invalid Request", kind)
        error = RequestError.invalid_request({"details": f"a JSON-RPC message is an object, not {kind}"})
        self.answers.write(json.dumps({"jsonrpc": "2.0", "id": None, "error": error.to_error_obj()}).encode() + b"\n")
        await self.answers.drain()
        return True


def _not_an_object(line: bytes) -> str | None:
    """What JSON value `line` is when it is one but not a JSON-RPC object; None for an object (or
    not JSON: the SDK logs that and skips it). An object whose id is an array or an object is no
    JSON-RPC message either, and the SDK, which keys its waiting requests by id, dies on one."""
    if OBJECT_START.match(line) and not ODD_ID.search(line):
        return None
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if isinstance(value, dict):
        odd = isinstance(value.get("id"), (list, dict))
        return f"an object whose id is {'an array' if isinstance(value['id'], list) else 'an object'}" if odd else None
    return JSON_KINDS[type(value)]


def _feed(loop: asyncio.AbstractEventLoop, reader: asyncio.StreamReader, source: BinaryIO) -> None:
    try:
        while (data := source.read(1 << 16)):
            loop.call_soon_threadsafe(reader.feed_data, data)
    finally:
        loop.call_soon_threadsafe(reader.feed_eof)


class _FileTransport(asyncio.WriteTransport):
    """Writes each message whole to a regular file, at once (a file never blocks for long)."""

    def __init__(self, target: BinaryIO) -> None:
        super().__init__()
        self._target, self._closing = target, False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not self._closing:
            self._target.write(data)

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        self._closing = True

    def can_write_eof(self) -> bool:
        return False
