"""Can the sandbox run here? bubblewrap must be installed and able to create the namespaces it
needs (some containers and hardened kernels refuse unprivileged user namespaces). Asked once per
process; the answer says what is missing and how to fix it, for the one notice the user gets."""
from __future__ import annotations

import functools
import shutil
import subprocess
import sys
from dataclasses import dataclass

PROBE_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class Availability:
    ok: bool
    bwrap: str | None = None       # the binary's path
    socat: str | None = None       # the relay a host list needs (None: only none/all work)
    problem: str = ""              # what is wrong, for the notice
    fix: str = ""                  # how to fix it

    def notice(self) -> str:
        return f"the OS sandbox cannot run: {self.problem}. {self.fix}"


def _install_hint() -> str:
    return ("Install bubblewrap (Debian/Ubuntu: sudo apt-get install bubblewrap socat; Fedora: sudo dnf install "
            "bubblewrap socat)")


@functools.lru_cache(maxsize=4)
def check(bwrap: str | None = None) -> Availability:
    """Whether `bwrap` (default: the one on PATH) can start a command in new PID, IPC, network and
    mount namespaces with a read-only root; never raises."""
    if not sys.platform.startswith("linux"):
        return Availability(False, problem=f"the OS sandbox is built on Linux's bubblewrap; this is {sys.platform}",
                            fix="Run ctxtui on Linux (or WSL2) for a sandboxed bash; until then every bash "
                                "command asks first")
    path = bwrap or shutil.which("bwrap")
    if not path:
        return Availability(False, problem="bubblewrap (bwrap) is not installed",
                            fix=_install_hint() + "; until then every bash command asks first")
    argv = [path, "--cap-drop", "ALL", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid",
            "--unshare-net", "--unshare-ipc", "--die-with-parent", "--", "/bin/sh", "-c", "true"]
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=PROBE_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError) as e:
        return Availability(False, path, problem=f"{path} could not be run ({e})", fix=_install_hint())
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        why = said[-1] if said else f"exit {done.returncode}"
        return Availability(False, path, problem=f"bubblewrap cannot create namespaces here ({why})",
                            fix="Allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, or "
                                "kernel.apparmor_restrict_unprivileged_userns=0 on Ubuntu 24.04), or run ctxtui "
                                "outside this container; until then every bash command asks first")
    return Availability(True, path, shutil.which("socat"))
