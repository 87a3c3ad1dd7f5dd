"""The API client's deadlines (issue 10, case 10: "a server that accepts and never answers is
waited on for ~90 minutes with nothing on screen"): connect and idle-stream timeouts through the
real SDK, a visible wait, a clear error, and a give-up time of the SDK's own retries only."""
from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import anthropic
import httpx2
import pytest

from agent_core import events as ev
from agent_core.providers.anthropic_client import AnthropicClient
from agent_core.config import ConfigError, load_config
from agent_core.providers.errors import classify
from agent_core.loop.factory import make_client
from agent_core.providers.model import ModelError
from app.cli.main import build_parser
from tests.fake_anthropic import reply

from tests.agent_helpers import MODEL, SECRET, make_workspace, user_dirs

ROOT = Path(__file__).resolve().parents[3]
HANG_GUARD_S = 60
USER = [{"role": "user", "content": [{"type": "text", "text": "hello"}]}]


class SilentServer:
    """Accepts connections on loopback and never sends a byte back."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.05)
        self.conns: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            self.conns.append(conn)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def connections(self, at_least: int) -> int:
        """How many connections were accepted (waits a little for the accept thread)."""
        deadline = time.monotonic() + 5
        while len(self.conns) < at_least and time.monotonic() < deadline:
            time.sleep(0.02)
        return len(self.conns)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        for c in self.conns:
            c.close()
        self.sock.close()


@pytest.fixture
def silent():
    server = SilentServer()
    yield server
    server.close()


async def drain(client: AnthropicClient) -> tuple[ModelError, list]:
    seen: list = []

    async def go() -> None:
        async for item in client.stream(system="Be brief.", messages=USER, tools=[], max_tokens=100):
            seen.append(item)

    with pytest.raises(ModelError) as e:
        await asyncio.wait_for(go(), HANG_GUARD_S)
    await client.aclose()
    assert SECRET not in str(e.value)
    return e.value, seen


async def test_a_server_that_never_answers_ends_in_a_clear_timeout(silent):
    client = AnthropicClient(api_key=SECRET, base_url=silent.base_url, model=MODEL, max_retries=1,
                             connect_timeout=0.5, idle_timeout=0.5)
    err, _ = await drain(client)
    assert err.kind == "connection" and err.retryable
    assert "did not answer within 0.5 s (CTXTUI_API_IDLE_TIMEOUT)" in err.message
    assert "ANTHROPIC_BASE_URL" in err.message and "retried 1 time" in err.message
    # The SDK's own retry happened; the loop must not send the request yet again.
    assert silent.connections(2) == 2
    assert err.already_retried


async def test_waiting_for_the_first_byte_is_shown(silent):
    client = AnthropicClient(api_key=SECRET, base_url=silent.base_url, model=MODEL, max_retries=1,
                             connect_timeout=0.5, idle_timeout=0.6)
    client.waiting_every = 0.1
    _, seen = await drain(client)
    waits = [x for x in seen if isinstance(x, ev.Waiting)]
    assert waits and all(isinstance(w, ev.Notice) for w in waits)     # shown wherever notices are
    assert waits[0].message.startswith("Waiting for the API: ") and "attempt 1/2" in waits[0].message
    assert {w.attempt for w in waits} == {1, 2} and all(w.of == 2 for w in waits)
    assert [w.elapsed_s for w in waits] == sorted(w.elapsed_s for w in waits)
    assert waits[0].to_dict()["type"] == "waiting"


async def test_a_stream_that_goes_silent_mid_answer_times_out(fake_anthropic):
    fake_anthropic.push(reply("one two three four five six", chunk=4, delay=5))
    client = AnthropicClient(api_key=SECRET, base_url=fake_anthropic.base_url, model=MODEL, max_retries=0,
                             idle_timeout=0.5)
    err, seen = await drain(client)
    assert err.kind == "connection" and err.retryable and err.status is None
    assert "0.5 s (CTXTUI_API_IDLE_TIMEOUT)" in err.message and "partial answer was discarded" in err.message
    assert not err.already_retried          # the loop may send it again: the SDK never retries a started stream


def test_a_connect_timeout_names_its_setting():
    request = httpx2.Request("POST", "https://api.example.test/v1/messages")
    exc = anthropic.APITimeoutError(request=request)
    exc.__cause__ = httpx2.ConnectTimeout("timed out")
    err = classify(exc, base_url="https://api.example.test", retries=2, connect_timeout=4, idle_timeout=30)
    assert "could not connect" in err.message.lower() and "within 4 s (CTXTUI_API_CONNECT_TIMEOUT)" in err.message
    assert "ANTHROPIC_BASE_URL" in err.message and err.already_retried


def test_api_timeouts_are_settings_with_flags(tmp_path):
    assert (lambda c: (c.api_connect_timeout, c.api_idle_timeout))(
        load_config({}, environ={}, workspace=tmp_path)) == (10.0, 120.0)
    c = load_config({}, environ={"CTXTUI_API_CONNECT_TIMEOUT": "4", "CTXTUI_API_IDLE_TIMEOUT": "30"},
                    workspace=tmp_path)
    assert (c.api_connect_timeout, c.api_idle_timeout) == (4.0, 30.0)
    args = build_parser().parse_args(["--api-connect-timeout", "3", "--api-idle-timeout", "45"])
    c = load_config(args, environ={"CTXTUI_API_IDLE_TIMEOUT": "30"}, workspace=tmp_path)
    assert (c.api_connect_timeout, c.api_idle_timeout) == (3.0, 45.0)
    client = make_client(load_config({"model": MODEL}, environ={
        "ANTHROPIC_API_KEY": SECRET, "CTXTUI_API_CONNECT_TIMEOUT": "4", "CTXTUI_API_IDLE_TIMEOUT": "30"},
        workspace=tmp_path))
    t = client._client.timeout
    assert (t.connect, t.read) == (4.0, 30.0) and client._client.max_retries == 2


BAD_TIMEOUTS = [(name, value) for name in ("CTXTUI_API_CONNECT_TIMEOUT", "CTXTUI_API_IDLE_TIMEOUT")
                for value in ("0", "-1", "soon", "inf")]


@pytest.mark.parametrize(("name", "value"), BAD_TIMEOUTS)
def test_a_bad_api_timeout_names_the_variable(tmp_path, name, value):
    with pytest.raises(ConfigError) as e:
        load_config({}, environ={name: value}, workspace=tmp_path)
    assert name in str(e.value) and "seconds" in str(e.value)


# the command, once per value in CI (each run starts a Python; the message is the one checked above)
@pytest.mark.parametrize(("name", "value"), [BAD_TIMEOUTS[2], *(pytest.param(*bad, marks=pytest.mark.slow)
                                                              for bad in BAD_TIMEOUTS if bad != BAD_TIMEOUTS[2])])
def test_a_bad_api_timeout_exits_2_naming_the_variable(tmp_path, name, value):
    done = subprocess.run([sys.executable, "-m", "app.cli", "--headless", "-p", "hi", "--workspace", str(tmp_path)],
                          cwd=ROOT, env={**os.environ, name: value}, capture_output=True, text=True,
                          timeout=HANG_GUARD_S)
    assert done.returncode == 2 and name in done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow
def test_headless_against_a_silent_server_shows_the_wait_and_gives_up(tmp_path, silent):
    ws = make_workspace(tmp_path)
    env = {**os.environ, **user_dirs(), "ANTHROPIC_API_KEY": SECRET, "ANTHROPIC_BASE_URL": silent.base_url,
           "CTXTUI_MODEL": MODEL, "CTXTUI_API_CONNECT_TIMEOUT": "0.5", "CTXTUI_API_IDLE_TIMEOUT": "0.5"}
    done = subprocess.run([sys.executable, "-m", "app.cli", "--headless", "-p", "hi", "--workspace", str(ws),
                           "--output-format", "stream-json"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=HANG_GUARD_S)
    assert done.returncode == 1, done.stderr[-2000:]
    events = [json.loads(line) for line in done.stdout.splitlines()]
    types = [e["type"] for e in events]
    assert "waiting" in types and "stream_retry" not in types
    (error,) = [e for e in events if e["type"] == "error"]
    assert "CTXTUI_API_IDLE_TIMEOUT" in error["message"] and "ANTHROPIC_BASE_URL" in error["message"]
    assert SECRET not in done.stdout + done.stderr
    # the head's count (one try: a count is optional), then the request and the SDK's two retries
    assert silent.connections(4) == 4
