"""ctxtui's own credentials: where they live once ctxtui has started, and what they look like.

The variables in `SECRET_ENV_VARS` (and `ANTHROPIC_BASE_URL` when it carries a password) are
scrubbed from everything written and kept out of the environment of every command the model runs.
That is not enough on its own: `/proc/<pid>/environ` shows the environment a process was *started*
with, whatever it later deletes, and on Linux a root process can read it even from a non-dumpable
ctxtui. So the commands that run tools call `shed_from_environment()` first: it starts ctxtui again
(`execve`, same pid) with an environment that holds no credential, handing the values over through
a pipe that the new image reads once and closes. From then on they live in this process's memory
only (`held()`), and `with_held()` gives the configuration loader a view that includes them.
"""
from __future__ import annotations

import json
import os
import re
import sys
from typing import Mapping, Sequence
from urllib.parse import urlsplit

from compaction.scrub import redact_url, register_secret, scrub

SECRET_ENV_VARS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN",
                   "OTEL_EXPORTER_OTLP_HEADERS")   # the collector's token, when telemetry is on
URL_ENV_VARS = ("ANTHROPIC_BASE_URL",)        # a credential only when it carries a password
HANDOFF_VAR = "CTXTUI_CREDENTIALS_FD"         # the pipe the re-executed image reads them from
MAX_HANDOFF = 60_000                          # below a pipe's buffer: the write never blocks

_held: dict[str, str] = {}


def _has_password(url: str) -> bool:
    try:
        return urlsplit(url.strip()).password is not None
    except ValueError:
        return False


def credentials_in(environ: Mapping[str, str]) -> dict[str, str]:
    """The credential variables set (non-empty) in `environ`."""
    found = {k: environ[k] for k in SECRET_ENV_VARS if (environ.get(k) or "").strip()}
    found.update({k: environ[k] for k in URL_ENV_VARS if _has_password(environ.get(k) or "")})
    return found


def held() -> dict[str, str]:
    """The credentials this process took out of its environment at start (empty when none)."""
    return dict(_held)


def with_held(environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` with the held credentials put back, for the configuration loader only."""
    return {**environ, **{k: v for k, v in _held.items() if k not in environ}}


def _take_handoff(environ: dict[str, str] | os._Environ) -> bool:
    """In the re-executed image: read the credentials from the inherited pipe, close it."""
    fd_text = environ.pop(HANDOFF_VAR, None)
    if fd_text is None:
        return False
    try:
        fd = int(fd_text)
        with os.fdopen(fd, "rb", closefd=True) as f:
            data = json.loads(f.read(MAX_HANDOFF + 1).decode("utf-8"))
    except (ValueError, OSError):
        return True                              # nothing usable was handed over: run without
    if isinstance(data, dict):
        _held.update({k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)})
    return True


def shed_from_environment(argv: Sequence[str] | None = None) -> None:
    """Leave this process with no credential in its environment, keeping them in memory.

    With credentials in the environment, re-execute `argv` (default `sys.orig_argv`: the same
    interpreter, flags and arguments) with an environment without them; the new image calls this
    again, finds the pipe and takes them from it. Where `execve` is not possible (no original
    command line, a value too large for the pipe) the variables are only removed from
    `os.environ`, which keeps them from child processes but not from `/proc/<pid>/environ`."""
    if _take_handoff(os.environ):
        _register()
        return
    found = credentials_in(os.environ)
    if not found:
        return
    payload = json.dumps(found).encode("utf-8")
    command = list(sys.orig_argv if argv is None else argv)
    if command and len(payload) <= MAX_HANDOFF and hasattr(os, "execve") and sys.platform != "win32":
        env = {k: v for k, v in os.environ.items() if k not in found}
        read_end, write_end = os.pipe()
        try:
            os.write(write_end, payload)
        finally:
            os.close(write_end)
        os.set_inheritable(read_end, True)
        env[HANDOFF_VAR] = str(read_end)
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            os.execve(sys.executable, [sys.executable, *command[1:]], env)
        except OSError:
            os.close(read_end)                   # fall through: keep them in memory at least
    for k in found:
        os.environ.pop(k, None)
    _held.update(found)
    _register()


def _register() -> None:
    register_secret(*(v for k, v in _held.items() if k in SECRET_ENV_VARS))
    for k in URL_ENV_VARS:
        if k in _held:
            redact_url(_held[k])


# Shapes of tokens people keep in environments: provider prefixes, then any long unbroken run of
# letters and digits that mixes both (a key, a hash, a JWT part). Dashes break a run, so model ids
# and dated names do not count.
_TOKEN = re.compile(r"(?<![A-Za-z0-9_])(sk-ant-|sk-|ghp_|gho_|ghs_|github_pat_|xox[abpr]-|AKIA|ASIA|AIza|glpat-|eyJ)"
                    r"[A-Za-z0-9_\-]{8,}|[A-Za-z0-9_+/=]{24,}")


def looks_like_credential(value: object) -> bool:
    """True when a value could be a key or token, so an error message must not echo it."""
    if not isinstance(value, str):
        return False
    if scrub(value) != value:
        return True
    for m in _TOKEN.finditer(value):
        if m.group(1) or (any(c.isdigit() for c in m.group()) and any(c.isalpha() for c in m.group())):
            return True
    return False
