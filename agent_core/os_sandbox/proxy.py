"""The only way out of a sandbox whose network is a host list: an HTTP proxy outside it, on a Unix
socket bound inside (bubblewrap) and relayed to a loopback port (socat), as Claude Code's sandbox
does. It answers `CONNECT host:port` (HTTPS, and anything tunnelled) and plain `http://` requests,
for listed hosts only; anything else gets a 403 that names the host and the setting to change.
The sandbox's own network namespace has no other route, so a program that ignores the proxy
variables reaches nothing.

It runs on its own thread and event loop, started on first use, so it serves whichever loop runs
the command (the TUI's worker or headless) and never waits on the interface."""
from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import threading
from collections import deque
from typing import Callable

from agent_core.os_sandbox.settings import host_allowed

HEAD_LIMIT = 64 << 10          # a request head longer than this is refused
HEAD_TIMEOUT_S = 30.0
CONNECT_TIMEOUT_S = 10.0
CHUNK = 64 << 10


def _split_host_port(authority: str, default_port: int) -> tuple[str, int]:
    if authority.startswith("["):                       # [::1]:443
        host, _, rest = authority[1:].partition("]")
        port = rest.lstrip(":")
    else:
        host, sep, port = authority.rpartition(":")
        if not sep or not port.isdigit():
            host, port = authority, ""
    return host, int(port) if port.isdigit() else default_port


def parse_target(head: bytes) -> tuple[str, str, int, bytes] | None:
    """(method, host, port, head to forward) for a request head, None when it is not one we serve.
    A CONNECT forwards nothing; a plain request is rewritten to origin form (`GET /path`) without
    its proxy headers and with `Connection: close`, so a second request cannot ride along."""
    try:
        text = head.decode("latin-1")
    except UnicodeDecodeError:       # pragma: no cover - latin-1 decodes every byte
        return None
    first, _, rest = text.partition("\r\n")
    parts = first.split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/"):
        return None
    method, target, version = parts
    if method.upper() == "CONNECT":
        host, port = _split_host_port(target, 443)
        return (method.upper(), host, port, b"") if host else None
    if not target.lower().startswith("http://"):
        return None
    authority, slash, path = target[len("http://"):].partition("/")
    host, port = _split_host_port(authority.rpartition("@")[2], 80)
    lines = [ln for ln in rest.split("\r\n") if ln and not ln.lower().startswith(("proxy-", "connection:"))]
    forward = "\r\n".join([f"{method} {slash}{path or ''} {version}", *lines, "Connection: close", "", ""])
    return (method.upper(), host, port, forward.encode("latin-1")) if host else None


class HostProxy:
    """`allowed()` gives the host patterns at the moment of each request (the user may change them
    in /sandbox). `blocked` keeps the latest refused hosts, for the /sandbox screen."""

    def __init__(self, allowed: Callable[[], tuple[str, ...]]) -> None:
        self.allowed = allowed
        self.blocked: deque[str] = deque(maxlen=20)
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._dir: str | None = None
        self.socket_path: str | None = None

    def start(self) -> str:
        """The socket's path, starting the proxy on first call."""
        with self._lock:
            if self.socket_path is not None:
                return self.socket_path
            self._dir = tempfile.mkdtemp(prefix="ctxtui-net-")      # 0700: only this user reaches it
            path = os.path.join(self._dir, "proxy.sock")
            self._loop = asyncio.new_event_loop()
            ready = threading.Event()
            threading.Thread(target=self._run, args=(path, ready), name="ctxtui-sandbox-proxy", daemon=True).start()
            if not ready.wait(10) or self._server is None:
                raise OSError("the sandbox's network proxy did not start")
            self.socket_path = path
            return path

    def _run(self, path: str, ready: threading.Event) -> None:
        assert self._loop is not None
        asyncio.set_event_loop(self._loop)

        async def serve() -> None:
            self._server = await asyncio.start_unix_server(self._serve, path=path)
            os.chmod(path, 0o600)
        try:
            self._loop.run_until_complete(serve())
        finally:
            ready.set()
        self._loop.run_forever()

    def close(self) -> None:
        with self._lock:
            loop, self._loop = self._loop, None
            if loop is not None:
                loop.call_soon_threadsafe(loop.stop)
            if self._dir:
                shutil.rmtree(self._dir, ignore_errors=True)
            self.socket_path = self._dir = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await self._handle(reader, writer)
        except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT_S)
        if len(head) > HEAD_LIMIT:
            return await _refuse(writer, 431, "request head too large")
        target = parse_target(head)
        if target is None:
            return await _refuse(writer, 400, "the sandbox's proxy takes CONNECT and http:// requests only")
        method, host, port, forward = target
        if not host_allowed(host, self.allowed()):
            self.blocked.append(f"{host}:{port}")
            return await _refuse(writer, 403, f"{host} is not in the sandbox's allowed hosts; the user can allow it "
                                              f"with /sandbox, --sandbox-network or the sandbox_network setting")
        try:
            up_r, up_w = await asyncio.wait_for(asyncio.open_connection(host, port), CONNECT_TIMEOUT_S)
        except (OSError, asyncio.TimeoutError) as e:
            return await _refuse(writer, 502, f"cannot reach {host}:{port} ({e})")
        if method == "CONNECT":
            writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        else:
            up_w.write(forward)
        await writer.drain()
        await asyncio.gather(_pipe(reader, up_w), _pipe(up_r, writer))


async def _pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
    try:
        while data := await src.read(CHUNK):
            dst.write(data)
            await dst.drain()
        if dst.can_write_eof():
            dst.write_eof()
    except OSError:
        dst.close()


async def _refuse(writer: asyncio.StreamWriter, code: int, why: str) -> None:
    reason = {400: "Bad Request", 403: "Forbidden", 431: "Request Header Fields Too Large", 502: "Bad Gateway"}[code]
    body = f"ctxtui sandbox: {why}\n".encode()
    writer.write(f"HTTP/1.1 {code} {reason}\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\n"
                 f"Connection: close\r\n\r\n".encode() + body)
    await writer.drain()
