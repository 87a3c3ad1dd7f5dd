"""What the user chose for the OS sandbox, parsed from a flag, the environment or the user file.

Modes (as Claude Code's `/sandbox` names them): `auto-allow` runs bash inside the sandbox without a
permission prompt; `ask` runs it inside and still asks; `off` runs it unconfined (and asks). Network:
`none`, `all`, or a list of hosts (`example.com`, `*.example.com`, `127.0.0.1`) reached through a
filtering proxy. These loosen or tighten what a tool may do, so a repository's `.env` may not set
them unless the folder is trusted (trust.SENSITIVE)."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MODES = ("auto-allow", "ask", "off")
_MODE_ALIASES = {"auto": "auto-allow", "on": "auto-allow", "true": "auto-allow", "1": "auto-allow",
                 "false": "off", "0": "off", "no": "off"}

# Folders and files that hold credentials: not visible inside the sandbox at all (under $HOME).
SECRET_PATHS = (".ssh", ".aws", ".gnupg", ".config/gh", ".netrc", ".git-credentials", ".docker",
                ".kube", ".config/gcloud", ".azure", ".pypirc", ".npmrc", ".claude/.credentials.json",
                ".password-store", ".local/share/keyrings")

# Unix sockets that hand out power a read-only mount does not take away (connect() works on a
# read-only file system): the container engines (root on the host), the system bus. Plus, at run
# time, the user's runtime folder (session bus, gpg and ssh agents) and $SSH_AUTH_SOCK.
SYSTEM_SOCKETS = ("/run/docker.sock", "/var/run/docker.sock", "/run/containerd/containerd.sock", "/run/podman",
                  "/run/dbus/system_bus_socket", "/var/run/dbus/system_bus_socket")
AGENT_VARS = ("SSH_AUTH_SOCK", "GPG_AGENT_INFO", "DBUS_SESSION_BUS_ADDRESS")   # not passed into the sandbox

_HOST = re.compile(r"^(\*\.)?[A-Za-z0-9]([A-Za-z0-9-]{0,62})(\.[A-Za-z0-9]([A-Za-z0-9-]{0,62}))*$"
                   r"|^\d{1,3}(\.\d{1,3}){3}$|^\[?[0-9A-Fa-f:]+\]?$")


@dataclass(frozen=True)
class SandboxSettings:
    """`network`: "none", "all", or a tuple of host patterns. `hide`: more paths to hide,
    `write`: more paths to leave writable (a cache folder, say)."""
    mode: str = "off"
    network: str | tuple[str, ...] = "none"
    hide: tuple[Path, ...] = ()
    write: tuple[Path, ...] = ()

    @property
    def enabled(self) -> bool:
        return self.mode != "off"

    @property
    def hosts(self) -> tuple[str, ...]:
        return self.network if isinstance(self.network, tuple) else ()

    def network_text(self) -> str:
        return ", ".join(self.network) if isinstance(self.network, tuple) else self.network


def parse_mode(v: Any) -> str:
    """A mode name (or on/off/auto); raises ValueError otherwise."""
    if isinstance(v, bool):
        return "auto-allow" if v else "off"
    if not isinstance(v, str):
        raise ValueError
    s = v.strip().lower()
    s = _MODE_ALIASES.get(s, s)
    if s not in MODES:
        raise ValueError
    return s


def parse_network(v: Any) -> str | tuple[str, ...]:
    """`none`, `all`, or hosts separated by commas (a list in the user file); raises ValueError."""
    items = [v] if isinstance(v, str) else list(v) if isinstance(v, (list, tuple)) else None
    if items is None or not all(isinstance(i, str) for i in items):
        raise ValueError
    hosts = [h.strip().lower() for i in items for h in i.split(",") if h.strip()]
    if hosts in (["none"], ["all"]):
        return hosts[0]
    if not hosts or any(h in ("none", "all") or not _HOST.match(h) for h in hosts):
        raise ValueError
    return tuple(dict.fromkeys(hosts))


def parse_paths(v: Any) -> tuple[Path, ...]:
    """Paths separated by commas, or a list (the user file); `~` is the user's home."""
    items = [v] if isinstance(v, str) else list(v) if isinstance(v, (list, tuple)) else None
    if items is None or not all(isinstance(i, (str, Path)) for i in items):
        raise ValueError
    out = [Path(os.path.expanduser(p.strip())) for i in items for p in str(i).split(",") if p.strip()]
    if not out or any(not p.is_absolute() for p in out):
        raise ValueError
    return tuple(out)


def host_allowed(host: str, patterns: tuple[str, ...]) -> bool:
    """`host` matches a pattern exactly, or `*.example.com` matches any name under example.com
    (not example.com itself, as Claude Code's allowedDomains reads it)."""
    h = host.strip().lower().rstrip(".").strip("[]")
    for p in patterns:
        p = p.strip("[]")
        if p.startswith("*."):
            if h.endswith(p[1:]) and len(h) > len(p) - 1:
                return True
        elif h == p:
            return True
    return False
