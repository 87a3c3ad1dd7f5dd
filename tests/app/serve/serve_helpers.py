"""Shared by the serve tests: a GuardedServer running in the test's own event loop on 127.0.0.1:0,
and `ctxtui serve` as a process whose printed URL is read from its stdout."""
from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import AsyncIterator, Sequence

from app.serve.access import Access, new_token
from app.serve.loopback import bind
from app.serve.server import GuardedServer

ROOT = Path(__file__).resolve().parents[3]
FAKE_APP = [sys.executable, str(Path(__file__).with_name("fake_textual_app.py"))]
URL = re.compile(r"http://127\.0\.0\.1:(\d+)/([A-Za-z0-9_-]+)/")


@contextlib.asynccontextmanager
async def running_server(argv: Sequence[str] = tuple(FAKE_APP)) -> AsyncIterator[GuardedServer]:
    """A GuardedServer for `argv` (default: the fake app), serving until the block ends."""
    bound = bind("127.0.0.1", 0)
    server = GuardedServer(list(argv), bound, Access.for_address(new_token(), bound.ip, bound.port), title="test")
    stop, up = asyncio.Event(), asyncio.Event()
    task = asyncio.create_task(server.run(stop, on_signals=False, started=up.set))
    try:
        await asyncio.wait_for(up.wait(), 10)
        yield server
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)
        bound.sock.close()
        # textual-serve never closes a finished app's process transport: let the child watcher see the
        # exit, then collect it while this loop still runs (collected after, it warns "loop is closed").
        await asyncio.sleep(0.3)
        gc.collect()


def serve_process(args: Sequence[str], *, env: dict[str, str], cwd: Path) -> subprocess.Popen[str]:
    """`ctxtui serve ARGS` in a process group of its own (so the test can end it and every tab's process)."""
    return subprocess.Popen([sys.executable, "-m", "app.cli", "serve", *args], cwd=str(cwd), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)


def read_url(proc: subprocess.Popen[str], timeout: float = 60) -> tuple[str, list[str]]:
    """The URL the server printed, and every line it printed up to it."""
    assert proc.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if m := URL.search(line):
            return m.group(), lines
    raise AssertionError(f"ctxtui serve printed no URL:\n{''.join(lines)}")


def stop_group(proc: subprocess.Popen[str]) -> str:
    """SIGTERM the server's process group, SIGKILL it if it lingers; what it printed after the URL."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        rest, _ = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        rest, _ = proc.communicate(timeout=10)
    return rest or ""


def clean_env(home: Path) -> dict[str, str]:
    """The environment of a served ctxtui: no key (the demo model), state and config under `home`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_", "CTXTUI_", "OTEL_"))}
    env.update(HOME=str(home / "home"), CTXTUI_HOME=str(home / "state"), XDG_STATE_HOME=str(home / "xdg-state"),
               XDG_CONFIG_HOME=str(home / "config"))
    return env
