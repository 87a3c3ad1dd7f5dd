"""ctxtui's own credentials: where they live once ctxtui has started, and what they look like.

The variables in `SECRET_ENV_VARS` (and those in `URL_ENV_VARS` when they carry a password) are
scrubbed from everything written and kept out of the environment of every command the model runs
and every MCP server (`tool_environment`: the one place that says which variables those are).
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
from urllib.parse import unquote, urlsplit

from compaction.scrub import redact_url, register_secret, scrub

OTEL_SIGNALS = ("TRACES", "METRICS", "LOGS")  # OTLP's per-signal variants of the headers and the endpoint
# The collector's token, when telemetry is on: `key=value,...` lists whose every value is a secret
HEADER_ENV_VARS = ("OTEL_EXPORTER_OTLP_HEADERS", *(f"OTEL_EXPORTER_OTLP_{s}_HEADERS" for s in OTEL_SIGNALS))
SECRET_ENV_VARS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", *HEADER_ENV_VARS)
# A credential only when it carries a password (https://user:password@host)
URL_ENV_VARS = ("ANTHROPIC_BASE_URL", "CTXTUI_OTEL_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT",
                *(f"OTEL_EXPORTER_OTLP_{s}_ENDPOINT" for s in OTEL_SIGNALS))
HANDOFF_VAR = "CTXTUI_CREDENTIALS_FD"         # the pipe the re-executed image reads them from
MAX_HANDOFF = 60_000                          # below a pipe's buffer: the write never blocks

_held: dict[str, str] = {}


def _has_password(url: str) -> bool:
    try:
        return urlsplit(url.strip()).password is not None
    except ValueError:
        return False


def is_credential(name: str, value: str | None) -> bool:
    """Whether variable `name` set to `value` carries a credential: a secret variable whatever its
    value (empty too: the name alone says what it is for), a URL variable when it holds a password."""
    return name in SECRET_ENV_VARS or (name in URL_ENV_VARS and _has_password(value or ""))


def credentials_in(environ: Mapping[str, str]) -> dict[str, str]:
    """The credential variables set (non-empty) in `environ`."""
    return {k: v for k, v in environ.items() if (v or "").strip() and is_credential(k, v)}


def tool_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` without any credential variable: what a command the model runs (bash, shell mode)
    may inherit. An MCP server's `${VAR}` is refused by the same rule (`is_credential`)."""
    return {k: v for k, v in environ.items() if not is_credential(k, v)}


def register_credential(name: str, value: str | None) -> None:
    """Scrub a credential variable's secret from everything written from now on: a URL's password,
    a header list's whole text and each value (and the token after `Bearer `), else the value."""
    if not value:
        return
    if name in URL_ENV_VARS:
        redact_url(value)
        return
    register_secret(value)
    if name in HEADER_ENV_VARS:
        for pair in value.split(","):
            header = unquote(pair.partition("=")[2]).strip()
            register_secret(header, header.split(" ", 1)[-1])


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
    for k, v in _held.items():
        register_credential(k, v)


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
