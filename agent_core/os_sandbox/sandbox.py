"""One session's OS sandbox: what the user chose, whether it can run here, and how a command is
started inside it. The bash tool and shell mode call `wrap`; the permission policy asks
`bash_mode`; the front-ends show `status()`. Changing the mode (/sandbox) takes effect at the next
command."""
from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterable

from agent_core.os_sandbox import probe
from agent_core.os_sandbox.bwrap_args import bwrap_argv, proxy_env, relay_command
from agent_core.os_sandbox.proxy import HostProxy
from agent_core.os_sandbox.settings import AGENT_VARS, SECRET_PATHS, SYSTEM_SOCKETS, SandboxSettings, parse_mode


@dataclass(frozen=True)
class SandboxStatus:
    """What the status bar and the /sandbox and /context screens say."""
    mode: str                  # auto-allow | ask | off
    confined: bool             # commands really run inside
    network: str               # none | all | the hosts
    problem: str = ""          # why it cannot run, when the user chose it
    hidden: tuple[str, ...] = ()
    writable: tuple[str, ...] = ()
    blocked: tuple[str, ...] = ()    # hosts the proxy refused lately

    def short(self) -> str:
        """A few words for the status bar."""
        if self.mode == "off":
            return "sandbox off"
        if not self.confined:
            return "sandbox unavailable: bash asks"
        return f"sandbox {self.mode} · net {self.network if len(self.network) <= 24 else 'hosts'}"


class OsSandbox:
    """`protected`: ctxtui's own state and config folders, hidden like the secret folders."""

    def __init__(self, settings: SandboxSettings, workspace: Path, *, protected: Iterable[Path] = (),
                 home: Path | None = None, bwrap: str | None = None) -> None:
        self.settings = settings
        self.workspace = Path(workspace)
        self.home = Path(home) if home is not None else Path(os.path.expanduser("~"))
        self.protected = tuple(protected)
        self._bwrap = bwrap
        self.proxy = HostProxy(lambda: self.settings.hosts)

    # ---- state
    def availability(self) -> probe.Availability:
        return probe.check(self._bwrap)

    @property
    def confines(self) -> bool:
        """True when commands run inside: the user chose the sandbox and it can run here."""
        return self.settings.enabled and self.availability().ok

    def set_mode(self, mode: str) -> None:
        self.settings = replace(self.settings, mode=parse_mode(mode))

    def set_network(self, network: str | tuple[str, ...]) -> None:
        self.settings = replace(self.settings, network=network)

    def hidden_paths(self) -> tuple[Path, ...]:
        agent = os.environ.get("SSH_AUTH_SOCK", "")
        runtime = (Path(f"/run/user/{os.getuid()}"),) if hasattr(os, "getuid") else ()
        return (*(self.home / p for p in SECRET_PATHS), *self.protected, *self.settings.hide,
                *(Path(p) for p in SYSTEM_SOCKETS), *runtime, *((Path(agent),) if os.path.isabs(agent) else ()))

    def status(self) -> SandboxStatus:
        s = self.settings
        problem = "" if not s.enabled or self.availability().ok else self.availability().notice()
        net = s.network_text()
        if s.hosts and not self.availability().socat and self.confines:
            net += " (socat missing: none reachable)"
        return SandboxStatus(s.mode, self.confines, net, problem,
                             tuple(str(p) for p in self.hidden_paths() if os.path.lexists(p)),
                             (str(self.workspace), "/tmp (private)", *(str(p) for p in s.write)),
                             tuple(self.proxy.blocked))

    def bash_mode(self, configured: str) -> str:
        """The permission mode for bash given its configured one: auto-allow lifts ask to allow
        while commands run inside; a sandbox the user chose that cannot run makes every command
        ask (a deny stays a deny)."""
        if configured == "deny" or not self.settings.enabled:
            return configured
        if not self.availability().ok:
            return "ask"
        return "allow" if self.settings.mode == "auto-allow" else configured

    def permission_note(self) -> str:
        """What the permission prompt says of a command about to run: where it will run."""
        if self.confines:
            return f"It will run in the OS sandbox (network: {self.settings.network_text()})."
        return ("It will run UNCONFINED, with your rights: the OS sandbox you chose cannot run here "
                f"({self.availability().problem}).")

    @property
    def forces_asking(self) -> bool:
        """The user chose the sandbox and it cannot run: no "always" answer may skip the question."""
        return self.settings.enabled and not self.availability().ok

    # ---- running
    def wrap(self, argv: list[str], env: dict[str, str]) -> tuple[list[str], dict[str, str]]:
        """`argv` and `env` to start instead, to run `argv` inside the sandbox (call when `confines`)."""
        found = self.availability()
        assert found.bwrap is not None
        s = self.settings
        env = {**{k: v for k, v in env.items() if k not in AGENT_VARS}, "TMPDIR": "/tmp"}
        network, socket = ("all" if s.network == "all" else "none"), None
        if s.hosts and found.socat:
            network, socket = "proxy", self.proxy.start()
            argv = relay_command(found.socat, argv)
            env = proxy_env(env, s.hosts)
        wrapped = bwrap_argv(found.bwrap, argv, workspace=self.workspace, hide=self.hidden_paths(),
                             write=s.write, network=network, proxy_socket=socket)
        return wrapped, env

    def close(self) -> None:
        self.proxy.close()

    def failure_hint(self) -> str:
        """Appended to a failed command's output: the model should know a denial may be the sandbox's."""
        s = self.settings
        net = {"none": "no network", "all": "network allowed"}.get(
            s.network_text(), f"network only to {s.network_text()} via the proxy")
        return (f"[ran in the OS sandbox: only the workspace and /tmp are writable, {net}; secret folders "
                f"are hidden. If the command failed because of that, ask the user rather than working around it]")
