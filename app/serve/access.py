"""Who may talk to `ctxtui serve`: three checks on every request, before any handler runs.

A tab on the page starts a ctxtui process that runs tools in the workspace, so a request must show
that it comes from the user who started the server, through the address it printed:

1. Host: the browser's Host header names this server's loopback address (127.0.0.1 or localhost
   and its port). A page on another site that makes its name resolve to 127.0.0.1 (DNS rebinding)
   sends its own name here and is refused.
2. Token: the first segment of the path is the random token the printed URL carries
   (`secrets.token_urlsafe`, compared with `hmac.compare_digest`). Every route lives under it: the
   page, its static files, the downloads and the websocket that starts the process. The path, not
   the query, because textual-serve's page builds the websocket URL by appending `?width=...` to
   the one it is given, and because URLs made from the router then carry the token by themselves.
3. Origin: a websocket must come from a page of this server (its Origin is one of the allowed
   origins); any other request that sends an Origin must too. This stops another site's page from
   opening the websocket in the user's browser (cross-site websocket hijacking) even with the token
   leaked in a referrer or a history entry.

A refusal is a 403 with a short plain sentence that repeats nothing of the request. These rules are
plain functions of the request's parts, so the tests check them without a server; `middleware`
puts them in front of an aiohttp application."""
from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass
from typing import Awaitable, Callable

from aiohttp import web

TOKEN_BYTES = 32     # 256 random bits: 43 URL-safe characters

BAD_HOST = "Forbidden: this server answers only at its local address (the URL ctxtui serve printed).\n"
BAD_TOKEN = "Forbidden: open the URL ctxtui serve printed; it carries the access token.\n"
BAD_ORIGIN = "Forbidden: this request comes from another site's page.\n"


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def _same(given: str, expected: str) -> bool:
    # As bytes: compare_digest takes str only when it is ASCII, and a path can hold anything.
    return hmac.compare_digest(given.encode("utf-8", "surrogateescape"), expected.encode("utf-8"))


@dataclass(frozen=True)
class Access:
    """The server's token and the netlocs ("127.0.0.1:8000") a browser may use to reach it."""
    token: str
    netlocs: frozenset[str]

    @classmethod
    def for_address(cls, token: str, ip: str, port: int) -> Access:
        host = f"[{ip}]" if ":" in ip else ip
        names = {host, "localhost"} if ip.startswith("127.") or ip == "::1" else {host}
        return cls(token, frozenset(f"{name}:{port}" for name in names))

    @property
    def origins(self) -> frozenset[str]:
        return frozenset(f"http://{netloc}" for netloc in self.netlocs)

    @property
    def prefix(self) -> str:
        """The path every route lives under."""
        return f"/{self.token}"

    def refusal(self, *, host: str | None, path: str, origin: str | None, websocket: bool) -> str | None:
        """Why this request is refused (the 403's text), or None when it may go on."""
        if (host or "").lower() not in self.netlocs:
            return BAD_HOST
        first = path.split("/", 2)[1] if path.startswith("/") else ""
        if not _same(first, self.token):
            return BAD_TOKEN
        if origin is None:
            return BAD_ORIGIN if websocket else None
        return None if origin.lower() in self.origins else BAD_ORIGIN


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def is_websocket(request: web.Request) -> bool:
    """A websocket upgrade, or a request for the websocket route however it is dressed."""
    return request.headers.get("Upgrade", "").lower() == "websocket" or request.path.rstrip("/").endswith("/ws")


def middleware(access: Access):
    """An aiohttp middleware that answers 403 to every request `access` refuses."""
    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        refused = access.refusal(host=request.headers.get("Host"), path=request.path,
                                 origin=request.headers.get("Origin"), websocket=is_websocket(request))
        if refused is not None:
            return web.Response(status=403, text=refused, content_type="text/plain")
        return await handler(request)
    return check
