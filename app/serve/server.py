"""textual-serve's Server behind access.py's rules, on a socket loopback.py bound.

A small subclass rather than a copy: textual-serve keeps its routes (the page, /ws, /static,
/download) and its process handling; this module only
- mounts its application under the token (`/<token>/...`), inside an outer application whose
  middleware refuses what access.py refuses, so no route is reachable without the token, the
  loopback Host and, for the websocket that starts a process, this server's Origin;
- gives every response headers that keep the token and the page to themselves (no referrer, no
  caching, no framing, a Content-Security-Policy that lets the page load and connect only here);
- starts quietly: no logo, no access log (each of its lines would hold the token); the caller
  prints the URL once;
- runs on the socket it is handed instead of binding host and port itself;
- on stop, ends the open tabs at once, so each tab's process is told to quit and waited for
  before the server exits (none is left running without its server).

textual-serve loads rich (not Textual); only this module imports it, and only `ctxtui serve` loads
this module, once it has parsed its arguments."""
from __future__ import annotations

import asyncio
import signal
from typing import Callable, Sequence

from aiohttp import web
from textual_serve.server import Server

from app.serve.access import Access, Handler, is_websocket, middleware
from app.serve.command import shell_command
from app.serve.loopback import Bound

SHUTDOWN_S = 10.0    # how long the tabs' processes get to exit (their sessions closed) when the server stops


def _headers(access: Access) -> dict[str, str]:
    # The page names its files and websocket by absolute URL (127.0.0.1), so a tab opened at
    # localhost loads them from the other name: both are listed, besides 'self'.
    here = " ".join(["'self'", *sorted(access.origins)])
    sockets = " ".join(f"ws://{netloc}" for netloc in sorted(access.netlocs))
    return {
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-store",
        "X-Content-Type-Options": "nosniff",
        "X-Frame-Options": "DENY",
        # textual-serve's page has an inline script and style; it also asks Google for a font,
        # which this keeps it from doing (the terminal falls back to a local monospace font).
        "Content-Security-Policy": (f"default-src {here}; script-src {here} 'unsafe-inline'; "
                                    f"style-src {here} 'unsafe-inline'; img-src {here} data:; font-src {here}; "
                                    f"connect-src {here} {sockets}; frame-ancestors 'none'; base-uri 'none'; "
                                    f"form-action 'none'"),
    }


class GuardedServer(Server):
    """textual-serve's Server for one ctxtui command, reachable only through `access`."""

    def __init__(self, argv: Sequence[str], bound: Bound, access: Access, *, title: str) -> None:
        super().__init__(shell_command(argv), host=bound.ip, port=bound.port, title=title,
                         public_url=f"http://{bound.netloc}")
        self.bound = bound
        self.access = access
        self._sessions: set[asyncio.Task[object]] = set()

    async def on_startup(self, app: web.Application) -> None:
        """textual-serve prints a logo and its URL here; `ctxtui serve` prints its own line instead."""

    async def make_app(self) -> web.Application:
        """textual-serve's application under /<token>/, behind the access middleware."""
        inner = await self._make_app()
        outer = web.Application(middlewares=[middleware(self.access), self._track_sessions])
        outer.add_subapp(self.access.prefix, inner)
        outer.on_shutdown.append(self._end_sessions)
        headers = _headers(self.access)

        async def add_headers(request: web.Request, response: web.StreamResponse) -> None:
            response.headers.update(headers)

        outer.on_response_prepare.append(add_headers)
        return outer

    @web.middleware
    async def _track_sessions(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Remember the task of each open websocket (each one a tab with its process)."""
        if not is_websocket(request):
            return await handler(request)
        task = asyncio.current_task()
        assert task is not None
        self._sessions.add(task)
        try:
            return await handler(request)
        finally:
            self._sessions.discard(task)

    async def _end_sessions(self, app: web.Application) -> None:
        """On stop, end every tab at once: textual-serve then tells its process to quit and waits
        for it (up to SHUTDOWN_S), instead of waiting for the tabs to close themselves first."""
        for task in list(self._sessions):
            task.cancel()

    @property
    def url(self) -> str:
        """The page's URL, token included: printed once, never logged."""
        return f"http://{self.bound.netloc}{self.access.prefix}/"

    async def run(self, stop: asyncio.Event, *, on_signals: bool = True,
                  started: Callable[[], None] | None = None) -> None:
        """Serve until `stop` is set; with `on_signals`, SIGINT and SIGTERM set it. `started` is
        called once the server accepts connections."""
        loop = asyncio.get_running_loop()
        handled = []
        for sig in (signal.SIGINT, signal.SIGTERM) if on_signals else ():
            try:
                loop.add_signal_handler(sig, stop.set)
                handled.append(sig)
            except (NotImplementedError, RuntimeError, ValueError):   # not the main thread, or no signals
                pass
        runner = web.AppRunner(await self.make_app(), access_log=None, handle_signals=False,
                               shutdown_timeout=SHUTDOWN_S)
        await runner.setup()
        try:
            await web.SockSite(runner, self.bound.sock).start()
            if started is not None:
                started()
            await stop.wait()
        finally:
            await runner.cleanup()
            for sig in handled:
                loop.remove_signal_handler(sig)
