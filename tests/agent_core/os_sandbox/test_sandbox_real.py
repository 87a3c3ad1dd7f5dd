"""Issue 50: bash under the real bubblewrap sandbox. Each test runs a real command through the
bash tool and checks what the kernel allowed, with a control run outside the sandbox where the
same command succeeds, so a sandbox that silently stopped confining fails here."""
from __future__ import annotations

import asyncio
import http.server
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from agent_core.tools import ToolContext
from tests.agent_core.os_sandbox.sandbox_helpers import STDLIB_PYTHON, bash, plant, require_bwrap, sandbox

pytestmark = pytest.mark.usefixtures("bwrap")


@pytest.fixture
def bwrap():
    require_bwrap()


@pytest.fixture
def layout(disk):
    ws, home, other = plant(disk, "planted-ssh-secret")
    (home / ".netrc").write_text("machine x login me password planted-netrc-secret\n")
    (other / "notes.txt").write_text("readable elsewhere\n")
    return ws, home, other


def ctx_for(ws: Path, home: Path, **settings) -> ToolContext:
    return ToolContext(ws, os_sandbox=sandbox(ws, home, **settings))


async def test_the_workspace_and_a_private_tmp_are_writable_nothing_else(layout):
    ws, home, other = layout
    ctx = ctx_for(ws, home)
    out = await bash(ctx, f"echo kept > {ws}/made.txt && echo scratch > /tmp/s && cat /tmp/s")
    assert out.meta["exit_code"] == 0 and out.meta["sandboxed"], out.content
    assert (ws / "made.txt").read_text() == "kept\n"
    denied = await bash(ctx, f"echo x > {other}/planted.txt")
    assert denied.meta["exit_code"] != 0 and "Read-only file system" in denied.content
    assert not (other / "planted.txt").exists()
    assert "ran in the OS sandbox" in denied.content          # the model is told why
    assert "readable elsewhere" in (await bash(ctx, f"cat {other}/notes.txt")).content   # read-only, not hidden
    control = await bash(ToolContext(ws), f"echo x > {other}/planted.txt")
    assert control.meta["exit_code"] == 0 and (other / "planted.txt").exists()


async def test_secret_folders_are_not_visible(layout):
    ws, home, _ = layout
    ctx = ctx_for(ws, home)
    out = await bash(ctx, f"cat {home}/.ssh/id_rsa {home}/.netrc; ls -A {home}/.ssh; echo listed")
    assert "planted-ssh-secret" not in out.content and "planted-netrc-secret" not in out.content
    assert "id_rsa" not in out.content.split("listed")[0].split("No such file")[-1]
    control = await bash(ToolContext(ws), f"cat {home}/.ssh/id_rsa")
    assert "planted-ssh-secret" in control.content


async def test_ctxtuis_state_inside_the_workspace_stays_hidden(layout):
    ws, home, _ = layout
    state = ws / ".state"
    state.mkdir()
    (state / "session.jsonl").write_text("permissions: always bash\n")
    (state / "projects" / "this-ws").mkdir(parents=True)
    sb = sandbox(ws, home)
    sb.protected = (state / "projects" / "this-ws", state)     # as the factory gives them: nested
    out = await bash(ToolContext(ws, os_sandbox=sb), f"cat {state}/session.jsonl; echo x > {state}/new; echo ran")
    assert "ran" in out.content.splitlines(), out.content          # the sandbox started at all
    assert "permissions" not in out.content and not (state / "new").exists()


async def test_no_ancestor_environment_is_readable(layout, tmp_path):
    """An ancestor started with a secret (`TOKEN=… timeout 60 ctxtui`) keeps it in its
    /proc/PID/environ; a tool outside the sandbox can read it, one inside cannot."""
    ws, home, _ = layout
    script = tmp_path / "run.py"
    script.write_text(
        "import asyncio, sys\n"
        "from pathlib import Path\n"
        "from tests.agent_core.os_sandbox.sandbox_helpers import bash, sandbox\n"
        "from agent_core.tools import ToolContext\n"
        "ws, home, boxed = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3] == '1'\n"
        "ctx = ToolContext(ws, os_sandbox=sandbox(ws, home) if boxed else None)\n"
        "cmd = \"cat /proc/[0-9]*/environ 2>/dev/null | tr '\\\\0' '\\\\n' | grep -c ancestor-secret-x\"\n"
        "out = asyncio.run(bash(ctx, cmd))\n"
        "print(out.content)\n")
    def run(boxed: str) -> str:
        # the shell holds the secret; it starts python without it, as `timeout` starts ctxtui
        env = {k: v for k, v in os.environ.items()}
        done = subprocess.run(["env", "ANCESTOR=ancestor-secret-x", "sh", "-c",
                               f'env -u ANCESTOR "{sys.executable}" {script} {ws} {home} {boxed}; :'],
                              capture_output=True, text=True, timeout=60, env=env, cwd=os.getcwd())
        return done.stdout
    assert run("0").splitlines()[0] != "0"           # control: outside, the ancestor's secret is readable
    assert run("1").splitlines()[0] == "0"


async def test_own_pid_namespace(layout):
    ws, home, _ = layout
    out = await bash(ctx_for(ws, home), "ls /proc | grep -c '^[0-9]'")
    assert int(out.content.splitlines()[0]) < 10        # bwrap's init, bash, ls, grep: not the host's


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's name)
        body = b"hello-from-host"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def host_server():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()


FETCH = ("{py} -c \"import urllib.request,sys; "
         "print(urllib.request.urlopen('http://127.0.0.1:{port}/', timeout=5).read().decode())\"")


@pytest.mark.parametrize("network, reachable", [("none", False), ("all", True), (("127.0.0.1",), True),
                                                (("example.com",), False)])
async def test_the_network_is_what_the_user_allowed(layout, host_server, network, reachable):
    ws, home, _ = layout
    sb = sandbox(ws, home, network=network)
    if sb.settings.hosts and not sb.availability().socat:
        pytest.skip("socat is not installed (a host list needs it; .ci/run installs it)")
    try:
        out = await bash(ToolContext(ws, os_sandbox=sb), FETCH.format(py=STDLIB_PYTHON, port=host_server))
    finally:
        sb.close()
    assert ("hello-from-host" in out.content) is reachable, out.content


async def test_https_through_the_proxy_is_refused_for_an_unlisted_host(layout):
    ws, home, _ = layout
    sb = sandbox(ws, home, network=("pypi.org",))
    if not sb.availability().socat:
        pytest.skip("socat is not installed")
    cmd = (f"{STDLIB_PYTHON} -c \"import urllib.request; "
           f"urllib.request.urlopen('https://evil.example/', timeout=5)\"")
    try:
        out = await bash(ToolContext(ws, os_sandbox=sb), cmd)
    finally:
        sb.close()
    assert out.is_error and "403" in out.content
    assert "evil.example:443" in sb.status().blocked


async def test_a_timeout_ends_everything_the_command_started(layout):
    ws, home, _ = layout
    marker = f"ctxtui-sbx-{os.getpid()}-{time.monotonic_ns()}"
    started = time.monotonic()
    cmd = f"(exec -a {marker} sleep 60) & setsid bash -c 'exec -a {marker} sleep 60' & sleep 60"
    out = await bash(ctx_for(ws, home), cmd, timeout=1)
    assert out.meta["timed_out"] and time.monotonic() - started < 8
    await asyncio.sleep(0.3)
    assert _running_with(marker) == [], "a process outlived the sandbox"
    await bash(ToolContext(ws), cmd, timeout=1)        # the control: unconfined, setsid leaves the group
    await asyncio.sleep(0.3)
    escaped = _running_with(marker)
    for pid in escaped:
        os.kill(pid, signal.SIGKILL)
    assert len(escaped) == 1


def _running_with(marker: str) -> list[int]:
    """Pids whose command line holds `marker` (the host's /proc: outside the sandbox)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def test_socket_left_for_the_proxy_is_private(layout):
    ws, home, _ = layout
    sb = sandbox(ws, home, network=("example.com",))
    path = sb.proxy.start()
    try:
        assert os.stat(os.path.dirname(path)).st_mode & 0o077 == 0
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(path)
            s.sendall(b"CONNECT other.example:443 HTTP/1.1\r\nHost: other.example\r\n\r\n")
            assert s.recv(100).startswith(b"HTTP/1.1 403")
    finally:
        sb.close()
    assert not os.path.exists(path)


async def test_the_agent_socket_is_not_reachable(layout, monkeypatch):
    """A read-only mount does not stop connect(): $SSH_AUTH_SOCK (and the container engines'
    sockets, the user's runtime folder) are hidden, and the variable is not passed in."""
    ws, home, other = layout
    path = other / "agent.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen()
    monkeypatch.setenv("SSH_AUTH_SOCK", str(path))
    probe_cmd = (f"{STDLIB_PYTHON} -c \"import os, socket; print('var', os.environ.get('SSH_AUTH_SOCK')); "
                 f"s = socket.socket(socket.AF_UNIX); s.connect('{path}'); print('connected')\"")
    try:
        inside = await bash(ctx_for(ws, home), probe_cmd)
        control = await bash(ToolContext(ws), probe_cmd)
    finally:
        server.close()
    assert "connected" not in inside.content and "var None" in inside.content
    assert "connected" in control.content


async def test_a_root_command_cannot_undo_the_sandbox(layout):
    """Run as root, bubblewrap keeps every capability unless told otherwise: unmounting a hidden
    folder or remounting / read-write would then undo the sandbox from inside."""
    ws, home, other = layout
    cmd = (f"umount {home}/.ssh; cat {home}/.ssh/id_rsa; mount -o remount,rw / && echo REMOUNTED; "
           f"mount --bind {ws} {other} && echo BOUND; grep CapEff /proc/self/status")
    out = await bash(ctx_for(ws, home), cmd)
    assert "planted-ssh-secret" not in out.content
    assert "REMOUNTED" not in out.content and "BOUND" not in out.content
    assert "CapEff:\t0000000000000000" in out.content
