"""The protocol's own copies of stdin and stdout, so nothing else can write to the channel.

stdout is the protocol: one stray line (a print, a library's warning, a tool's child process that
inherited fd 1) would break the client's parser. So the protocol takes private duplicates of fds 0
and 1, then fd 1 is pointed at stderr and fd 0 at /dev/null: whatever else writes to stdout lands
on stderr, and no child process can read the client's messages.
"""
from __future__ import annotations

import asyncio
import os
import sys
import threading
from typing import BinaryIO

STREAM_LIMIT = 50 * 1024 * 1024     # one message may hold a large file (the SDK's own default)


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
    reader = asyncio.StreamReader(limit=STREAM_LIMIT)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), proto_in)
    except ValueError:
        threading.Thread(target=_feed, args=(loop, reader, proto_in), daemon=True).start()
    try:
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, proto_out)
    except ValueError:
        transport, protocol = _FileTransport(proto_out), asyncio.streams.FlowControlMixin()
    return reader, asyncio.StreamWriter(transport, protocol, None, loop)  # type: ignore[arg-type]


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
