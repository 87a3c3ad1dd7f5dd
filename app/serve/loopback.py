"""The one address `ctxtui serve` listens on: a loopback address, bound here, before the server is built.

The served page starts a process that runs tools in the workspace, so the listening socket must not
be reachable from another machine: a non-loopback host is refused, never "fixed". The socket is
bound first and handed to aiohttp, so the port is known (also for --port 0) when the page's URLs
and the allowed origins are made, and there is no gap between choosing a port and listening on it.
Another machine reaches the server through `ssh -L` (docs/serve.md)."""
from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass

DEFAULT_HOST = "127.0.0.1"


class NotLoopback(ValueError):
    """The host given is not an address of this machine's loopback interface."""


def loopback_ip(host: str) -> str:
    """`host` as a loopback IP literal ("localhost" is 127.0.0.1, without asking any resolver);
    raises NotLoopback for anything else: 0.0.0.0, a LAN address, a name a resolver could answer."""
    text = host.strip().strip("[]")
    if text.lower() == "localhost":
        return DEFAULT_HOST
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        raise NotLoopback(f"{host!r} is not a loopback address") from None
    if not ip.is_loopback:
        raise NotLoopback(f"{host!r} is not a loopback address")
    return str(ip)


@dataclass(frozen=True)
class Bound:
    """A listening socket and the address a browser uses for it."""
    sock: socket.socket
    ip: str
    port: int

    @property
    def netloc(self) -> str:
        """host:port as it appears in a URL and in the browser's Host header."""
        host = f"[{self.ip}]" if ":" in self.ip else self.ip
        return f"{host}:{self.port}"


def bind(host: str, port: int) -> Bound:
    """Listen on (host, port), host checked by loopback_ip; port 0 takes a free one. Raises
    NotLoopback, or OSError (port in use, no permission)."""
    ip = loopback_ip(host)
    family = socket.AF_INET6 if ":" in ip else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)   # restart at once after a stop
        sock.bind((ip, port))
        sock.listen(128)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return Bound(sock, ip, sock.getsockname()[1])
