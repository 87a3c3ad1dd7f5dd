"""`ctxtui serve`'s server over real HTTP on 127.0.0.1 (in the test's event loop): no route answers
without the token, the websocket that starts a process needs the token and the page's Origin, and
with both a process really starts (a fake app here); every response carries the headers that keep
the page and its token to themselves. And the command prints its URL once: nothing else has the token."""
from __future__ import annotations

import asyncio
import gc
import os
import re
import time

import aiohttp

from app.serve.access import BAD_HOST, BAD_ORIGIN, BAD_TOKEN, Access, new_token
from app.serve.loopback import bind
from app.serve.server import GuardedServer
from tests.app.serve.fake_textual_app import GREETING
from tests.app.serve.serve_helpers import FAKE_APP, URL, clean_env, read_url, running_server, serve_process, stop_group


def origin_of(server) -> str:
    return f"http://{server.bound.netloc}"


async def get(url: str, **headers: str) -> tuple[int, str, dict[str, str]]:
    async with aiohttp.ClientSession() as s, s.get(url, headers=headers, allow_redirects=False) as r:
        return r.status, await r.text(), dict(r.headers)


async def test_the_page_needs_the_token():
    async with running_server() as server:
        base = origin_of(server)
        for path in ("/", "/ws", "/static/js/textual.js", f"/{server.access.token[:-2]}/", "/favicon.ico"):
            status, text, headers = await get(base + path)
            assert (status, text) == (403, BAD_TOKEN), path
            assert headers["Content-Type"].startswith("text/plain")
        status, text, _ = await get(server.url)
        assert status == 200 and "textual-terminal" in text


async def test_the_page_points_its_files_and_websocket_under_the_token():
    async with running_server() as server:
        _, text, _ = await get(server.url)
        prefix = f"{server.bound.netloc}/{server.access.token}/"
        assert f'data-session-websocket-url="ws://{prefix}ws"' in text
        assert f'src="http://{prefix}static/js/textual.js"' in text
        status, js, _ = await get(f"http://{prefix}static/js/textual.js")
        assert status == 200 and "WebSocket" in js


async def test_a_foreign_host_is_refused_with_the_token():
    async with running_server() as server:
        status, text, _ = await get(server.url, Host="rebound.evil.example")
        assert (status, text) == (403, BAD_HOST)


async def test_every_response_keeps_the_page_to_itself():
    async with running_server() as server:
        for url in (server.url, origin_of(server) + "/"):
            _, _, headers = await get(url)
            assert headers["Referrer-Policy"] == "no-referrer" and headers["Cache-Control"] == "no-store"
            assert headers["X-Frame-Options"] == "DENY"
            csp = headers["Content-Security-Policy"]
            assert "frame-ancestors 'none'" in csp and f"ws://{server.bound.netloc}" in csp
            assert "googleapis" not in csp and "*" not in csp


async def ws_status(url: str, origin: str | None) -> int:
    headers = {"Origin": origin} if origin else {}
    async with aiohttp.ClientSession() as s:
        try:
            async with s.ws_connect(url, headers=headers, autoping=False) as ws:
                await ws.close()
                return 101
        except aiohttp.WSServerHandshakeError as e:
            return e.status


async def test_the_websocket_needs_the_token_and_the_pages_origin():
    async with running_server() as server:
        ws = f"ws://{server.bound.netloc}/{server.access.token}/ws"
        wrong = f"ws://{server.bound.netloc}/{'A' * len(server.access.token)}/ws"
        assert await ws_status(f"ws://{server.bound.netloc}/ws", origin_of(server)) == 403
        assert await ws_status(wrong, origin_of(server)) == 403
        assert await ws_status(ws, None) == 403
        assert await ws_status(ws, "http://evil.example") == 403
        assert await ws_status(ws, f"http://127.0.0.1:{server.bound.port + 1}") == 403


async def test_a_refused_websocket_says_why_in_plain_words():
    async with running_server() as server:
        status, text, _ = await get(f"http://{server.bound.netloc}/{server.access.token}/ws",
                                    Origin="http://evil.example", Upgrade="websocket", Connection="Upgrade")
        assert (status, text) == (403, BAD_ORIGIN)


async def test_with_the_token_and_origin_the_websocket_starts_the_app():
    async with running_server() as server:
        url = f"ws://{server.bound.netloc}/{server.access.token}/ws?width=80&height=24"
        async with aiohttp.ClientSession() as s, s.ws_connect(url, headers={"Origin": origin_of(server)}) as ws:
            msg = await asyncio.wait_for(ws.receive(), 30)
            assert msg.type == aiohttp.WSMsgType.BINARY and msg.data == GREETING


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_stopping_the_server_ends_the_open_tabs_processes():
    bound = bind("127.0.0.1", 0)
    server = GuardedServer(FAKE_APP, bound, Access.for_address(new_token(), bound.ip, bound.port), title="test")
    stop, up = asyncio.Event(), asyncio.Event()
    task = asyncio.create_task(server.run(stop, on_signals=False, started=up.set))
    await asyncio.wait_for(up.wait(), 10)
    url = f"ws://{bound.netloc}/{server.access.token}/ws"
    async with aiohttp.ClientSession() as s, s.ws_connect(url, headers={"Origin": origin_of(server)}) as ws:
        assert (await asyncio.wait_for(ws.receive(), 30)).data == GREETING
        pid = int((await asyncio.wait_for(ws.receive(), 30)).data)
        assert alive(pid)
        tab = asyncio.create_task(ws.receive())      # the tab stays open, answering as a browser does
        started = time.monotonic()
        stop.set()
        await asyncio.wait_for(task, 30)
        assert (await tab).type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)
        assert time.monotonic() - started < 5        # not the shutdown timeout: the tab was ended at once
    bound.sock.close()
    deadline = time.monotonic() + 5
    while alive(pid) and time.monotonic() < deadline:  # reaped by asyncio's child watcher
        await asyncio.sleep(0.05)
    assert not alive(pid)
    gc.collect()


async def test_the_command_prints_the_token_once_and_logs_nothing_of_it(tmp_path):
    proc = serve_process(["--port", "0"], env=clean_env(tmp_path), cwd=tmp_path)
    try:
        url, before = read_url(proc)
        token = URL.search(url).group(2)
        base = url.split(token)[0]
        assert (await get(base))[0] == 403
        assert (await get(url))[0] == 200
        assert (await get(url + "static/css/xterm.css"))[0] == 200
        assert (await get(url + "nothing-here"))[0] == 404
    finally:
        after = stop_group(proc)
    assert proc.returncode == 0          # SIGTERM stops it cleanly
    printed = "".join(before) + after
    assert printed.count(token) == 1, printed
    assert re.search(r"^ctxtui serve: ctxtui at http://127\.0\.0\.1:\d+/", printed, re.M)
