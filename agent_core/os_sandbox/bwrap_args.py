"""The bubblewrap command line that confines one command. Pure: paths in, argv out, so the layout
is tested without running anything.

Layout, in mount order (a later mount covers an earlier one):
  /                 read-only (the system, the user's home, other projects: visible, not writable)
  /dev, /proc       fresh: a minimal /dev and the /proc of a new PID namespace (no ancestor's
                    environment or memory is visible)
  /tmp, /dev/shm    private and writable, gone when the command ends
  the workspace     writable, and any folder the user listed (`sandbox_write`)
  secret paths      hidden: an empty read-only folder, or /dev/null for a file
The network namespace is new (loopback only) unless the user allowed all; with a host list the
proxy's socket is bound inside and socat relays a loopback port to it (`relay_command`)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

PROXY_PORT = 3128                          # inside the sandbox's own network namespace
PROXY_SOCKET = "/tmp/.ctxtui-proxy.sock"   # where the proxy's socket appears inside


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def hidden_targets(candidates: Iterable[Path], visible: Iterable[Path]) -> list[tuple[str, bool]]:
    """(real path, is a folder) for each candidate that exists, through a symlink too, and does not
    hold a folder that must stay visible (the workspace): hiding that would hide the work itself.
    A candidate inside another one is left out: the outer one hides it."""
    keep = [os.path.realpath(v) for v in visible]
    out: dict[str, bool] = {}
    for c in candidates:
        for p in {str(c), os.path.realpath(c)}:
            if not os.path.lexists(p):
                continue
            real = os.path.realpath(p)
            if any(_inside(k, real) for k in keep) or not os.path.exists(real):
                continue
            out[real] = os.path.isdir(real)
    # A path inside a hidden folder is hidden with it; mounting over it as well would need a mount
    # point in that folder's empty read-only stand-in, which bubblewrap cannot make (ctxtui's state
    # root and this workspace's folder in it, say).
    folders = [p for p, is_dir in out.items() if is_dir]
    return sorted((p, d) for p, d in out.items() if not any(p != f and _inside(p, f) for f in folders))


def bwrap_argv(bwrap: str, command: list[str], *, workspace: Path, hide: Iterable[Path] = (),
               write: Iterable[Path] = (), network: str = "none", proxy_socket: str | None = None) -> list[str]:
    """`command` wrapped in bubblewrap. `network`: "none" (own namespace, loopback only), "all"
    (the host's network), or "proxy" (own namespace; `proxy_socket` bound at PROXY_SOCKET)."""
    ws = os.path.realpath(workspace)
    # --cap-drop ALL: run as root, bubblewrap would otherwise leave the command every capability, and
    # a `umount` of a hidden folder or `mount -o remount,rw /` would undo the sandbox from inside.
    argv = [bwrap, "--die-with-parent", "--cap-drop", "ALL", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
            "--unshare-cgroup-try", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--tmpfs", "/tmp", "--tmpfs", "/dev/shm"]
    if network != "all":
        argv.append("--unshare-net")
    for extra in write:
        real = os.path.realpath(extra)
        if os.path.isdir(real):
            argv += ["--bind", real, real]
    argv += ["--bind", ws, ws]
    for path, is_dir in hidden_targets(hide, [workspace]):
        argv += ["--tmpfs", path, "--remount-ro", path] if is_dir else ["--ro-bind", "/dev/null", path]
    if network == "proxy" and proxy_socket:
        argv += ["--bind", proxy_socket, PROXY_SOCKET]
    argv += ["--chdir", ws, "--"]
    return argv + command


def relay_command(socat: str, command: list[str]) -> list[str]:
    """`command`, preceded by a socat relay from 127.0.0.1:PROXY_PORT to the proxy's socket, run
    once the relay accepts connections (the relay ends with the sandbox's PID namespace)."""
    listen = f"TCP-LISTEN:{PROXY_PORT},bind=127.0.0.1,fork,reuseaddr"
    script = (f'"$0" {listen} UNIX-CONNECT:{PROXY_SOCKET} >/dev/null 2>&1 & '
              f'i=0; while [ $i -lt 300 ] && ! "$0" -u /dev/null TCP:127.0.0.1:{PROXY_PORT} 2>/dev/null; '
              f'do i=$((i+1)); sleep 0.01; done; exec "$@"')
    return ["/bin/sh", "-c", script, socat, *command]


LOOPBACK = ("localhost", "127.0.0.1", "::1")


def proxy_env(env: dict[str, str], hosts: Iterable[str] = ()) -> dict[str, str]:
    """`env` with every proxy variable the common tools read pointing at the relay. Loopback stays
    the sandbox's own (a server the command starts) unless the user listed it: then it is the
    host's, reached through the proxy."""
    url = f"http://127.0.0.1:{PROXY_PORT}"
    out = dict(env)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        out[name] = url
    listed = set(hosts)
    out["NO_PROXY"] = out["no_proxy"] = ",".join(h for h in LOOPBACK if h not in listed)
    return out
