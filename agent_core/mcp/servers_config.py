"""Which MCP servers a session starts, read from Claude Code's format so one file serves both.

`{"mcpServers": {NAME: {"command", "args", "env"} | {"type": "http", "url", "headers"}}}` comes
from `--mcp-config FILE` (the user's own), the user config file's `[mcp_servers.NAME]` tables, and
a project's `.mcp.json` only when the user trusted the folder: a repository never starts a process
on its own say. A later source overrides an earlier one by name (user file, project, flag).

`${VAR}` and `${VAR:-default}` are expanded from the user's environment, as Claude Code does, but
never to ctxtui's own credentials: no server is handed the key ctxtui holds. What a definition is
shown as (notices, /mcp) is what was written, `${VAR}` kept and passwords hidden; the values that
may be secret are registered with the scrubber at load, so no log, stdout or tool result repeats them.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping
from urllib.parse import unquote, urlsplit, urlunsplit

from compaction.scrub import REDACTED, register_secret, scrub

from agent_core.security.credentials import held, is_credential
from agent_core.security.visible_text import one_line
from agent_core.tool_spec import is_mcp_server_name

PROJECT_FILE = ".mcp.json"
MAX_FILE = 1 << 20
_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
TRANSPORTS = ("stdio", "http")
# A header, env or query name that says its value is a credential.
_CREDENTIAL_NAME = re.compile(r"auth|token|key|secret|passw|pwd|cookie|credential|signature|^sig$", re.I)
# Variables that hold no secret: registering `${HOME}` would redact every path in every tool result.
_PLAIN_VARS = frozenset({"HOME", "USER", "LOGNAME", "PWD", "PATH", "SHELL", "TERM", "LANG", "TMPDIR"})


class McpConfigError(ValueError):
    """A server definition that cannot be used; the message names the file and the server."""


@dataclass(frozen=True)
class ServerSpec:
    """One server as configured: how to reach it and where the definition came from."""
    name: str                      # as the tool names carry it (mcp__NAME__TOOL)
    transport: str                 # stdio | http
    origin: str                    # the file or table it was read from, for messages
    command: str = ""
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    url: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    shown: str = ""                      # the definition as written (`${VAR}` kept, passwords hidden)
    sandbox: bool = False                # `"sandbox": true`: start it inside the OS sandbox (agent_core/os_sandbox)
    secrets: tuple[str, ...] = field(default=(), repr=False)   # values no message may repeat

    def describe(self) -> str:
        """What the user configured, for /mcp and notices: as written, so no expanded value, header
        or env value (any may be secret) is shown."""
        if self.shown:
            return self.shown
        if self.transport == "http":
            return f"http {one_line(shown_url(self.url))}"
        return one_line(" ".join([self.command, *self.args]))

    def redact(self, text: str) -> str:
        """`text` (an error, the server's stderr) without this server's secrets: the SDK's and the
        server's own words may quote its URL, arguments or token."""
        if self.url and self.url in text:
            text = text.replace(self.url, shown_url(self.url))
        return scrub(text, self.secrets)


def tool_name_part(name: str) -> str:
    """A server or tool name as the API accepts it in a tool name (Claude Code's normalising)."""
    return _NAME_CHARS.sub("_", name)


def shown_url(url: str) -> str:
    """A URL for messages: a literal password and credential-named query values hidden (a
    `${VAR}` placeholder is kept: it shows what to set and holds nothing)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return REDACTED
    netloc = parts.netloc
    if parts.password is not None and not _VAR.fullmatch(parts.password):
        netloc = f"{parts.username or ''}:{REDACTED}@{netloc.rpartition('@')[2]}"
    query = "&".join(_shown_param(p) for p in parts.query.split("&")) if parts.query else ""
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _shown_param(param: str) -> str:
    name, eq, value = param.partition("=")
    if eq and value and _CREDENTIAL_NAME.search(unquote(name)) and not _VAR.fullmatch(value):
        return f"{name}={REDACTED}"
    return param


def _url_secrets(url: str) -> list[str]:
    """A URL's password and credential-named query values."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return [url]
    found = [parts.password] if parts.password else []
    for param in parts.query.split("&"):
        name, _eq, value = param.partition("=")
        if value and _CREDENTIAL_NAME.search(unquote(name)):
            found += [value, unquote(value)]
    return found


def _header_secrets(headers: Mapping[str, str]) -> list[str]:
    """Credential-named headers' values, and the credential of `Scheme CREDENTIAL` on its own."""
    found = []
    for name, value in headers.items():
        if _CREDENTIAL_NAME.search(name):
            found += [value, value.partition(" ")[2]]
    return found


def _maybe_secret(var: str, value: str) -> bool:
    """Whether an expanded value is registered: not a plain variable's, nor an existing path."""
    return var not in _PLAIN_VARS and not (os.path.isabs(value) and os.path.exists(value))


def _expand(value: str, environ: Mapping[str, str], where: str, expanded: list[str] | None = None) -> str:
    """`value` with its `${VAR}`s expanded; each value taken from the environment that may be a
    secret is added to `expanded` (a default is written in the file: not one)."""
    def one(m: re.Match) -> str:
        var, default = m.group(1), m.group(2)
        if is_credential(var, environ.get(var)) or var in held():      # what credentials.tool_environment drops
            raise McpConfigError(f"{where}: ${{{var}}} is ctxtui's own credential and is not handed to MCP servers")
        got = environ.get(var)
        if got is None:
            if default is None:
                raise McpConfigError(f"{where}: ${{{var}}} is not set (set it, or write ${{{var}:-default}})")
            return default
        if expanded is not None and _maybe_secret(var, got):
            expanded.append(got)
        return got
    return _VAR.sub(one, value)


def _strings(v: Any, what: str, where: str) -> list[str]:
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise McpConfigError(f"{where}: {what} must be a list of strings")
    return list(v)


def _table(v: Any, what: str, where: str) -> dict[str, str]:
    if not isinstance(v, dict) or not all(isinstance(k, str) and isinstance(x, str) for k, x in v.items()):
        raise McpConfigError(f"{where}: {what} must be an object of string values")
    return dict(v)


def parse_server(name: str, raw: Any, origin: str, environ: Mapping[str, str]) -> ServerSpec:
    """One definition, checked and expanded; raises McpConfigError saying what to fix."""
    where = f"MCP server {one_line(name)!r} in {origin}"
    if not isinstance(name, str) or not name.strip():
        raise McpConfigError(f"{origin}: an MCP server needs a non-empty name")
    if not is_mcp_server_name(part := tool_name_part(name)):    # mcp__a__b__TOOL: server a__b, or a's tool?
        better = re.sub("_+", "_", part).strip("_")
        raise McpConfigError(f"{where}: a server name may not hold '__' or begin or end with '_' (characters other "
                             f"than letters, digits, '-' and '_' count as '_'): its tools, mcp__{part}__TOOL, would "
                             f"read as another server's. Rename it" + (f", e.g. to {better!r}" if better else ""))
    if not isinstance(raw, dict):
        raise McpConfigError(f"{where}: the definition must be an object")
    kind = raw.get("type", "http" if "url" in raw else "stdio")
    if kind == "streamable-http":
        kind = "http"
    if kind not in TRANSPORTS:
        raise McpConfigError(f"{where}: type {one_line(str(kind))!r} is not supported; use stdio (command) or "
                             f"http (url)")
    expanded: list[str] = []
    def x(s: str) -> str:
        return _expand(s, environ, where, expanded)
    if kind == "http" and raw.get("sandbox"):
        raise McpConfigError(f"{where}: sandbox applies to stdio servers (a program ctxtui starts); an http "
                             f"server runs elsewhere")
    if kind == "http":
        url = raw.get("url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise McpConfigError(f"{where}: url must be an http:// or https:// address")
        headers = {k: x(v) for k, v in _table(raw.get("headers", {}), "headers", where).items()}
        full = x(url)
        return ServerSpec(tool_name_part(name), "http", origin, url=full, headers=headers,
                          shown=f"http {one_line(shown_url(url))}",
                          secrets=_secrets(expanded + _url_secrets(full) + _header_secrets(headers)))
    command = raw.get("command")
    if not isinstance(command, str) or not command.strip():
        raise McpConfigError(f"{where}: command must be the program to run (or give type http and a url)")
    args = _strings(raw.get("args", []), "args", where)
    env = {k: x(v) for k, v in _table(raw.get("env", {}), "env", where).items()}
    sandbox = raw.get("sandbox", False)
    if not isinstance(sandbox, bool):
        raise McpConfigError(f"{where}: sandbox must be true (start the server inside the OS sandbox) or false")
    return ServerSpec(tool_name_part(name), "stdio", origin, command=x(command), args=tuple(x(a) for a in args),
                      env=env, shown=one_line(" ".join([command, *args])) + (" (sandboxed)" if sandbox else ""),
                      sandbox=sandbox,
                      secrets=_secrets(expanded + [v for k, v in env.items() if _CREDENTIAL_NAME.search(k)]))


def _secrets(values: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(v for v in values if v and v.strip()))


def parse_servers(data: Any, origin: str, environ: Mapping[str, str]) -> tuple[list[ServerSpec], list[str]]:
    """A whole file's servers: the good ones and, for each bad one, a message (one bad server does
    not cost the others)."""
    if not isinstance(data, dict) or not isinstance(data.get("mcpServers", {}), dict):
        raise McpConfigError(f"{origin}: expected an object with \"mcpServers\": {{NAME: {{...}}}}")
    specs, problems = [], []
    for name, raw in data.get("mcpServers", {}).items():
        try:
            specs.append(parse_server(name, raw, origin, environ))
        except McpConfigError as e:
            problems.append(str(e))
    return specs, problems


def read_file(path: Path, environ: Mapping[str, str]) -> tuple[list[ServerSpec], list[str]]:
    """A JSON file in Claude Code's format; raises McpConfigError when it cannot be read at all."""
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_FILE + 1)
    except OSError as e:
        raise McpConfigError(f"{one_line(str(path))}: cannot read the MCP config: {e.strerror or e}") from None
    if len(raw) > MAX_FILE:
        raise McpConfigError(f"{one_line(str(path))}: the MCP config is larger than {MAX_FILE >> 20} MB")
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise McpConfigError(f"{one_line(str(path))}: the MCP config is not valid JSON: {e}") from None
    return parse_servers(data, one_line(str(path)), environ)


@dataclass
class Servers:
    """The servers to start, and what was said about the definitions on the way."""
    specs: list[ServerSpec] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)


def collect(*, flag_files: tuple[Path, ...] = (), user_table: Mapping[str, Any] | None = None,
            user_origin: str = "the user config file", workspace: Path | None = None, trusted: bool = False,
            environ: Mapping[str, str] | None = None) -> Servers:
    """Every source in order, later names overriding earlier ones. A file given with
    --mcp-config that cannot be read raises (the user asked for it); a project file's problems
    are notices."""
    environ = os.environ if environ is None else environ
    out = Servers()
    by_name: dict[str, ServerSpec] = {}
    if user_table:
        specs, problems = parse_servers({"mcpServers": dict(user_table)}, user_origin, environ)
        out.notices += problems
        by_name.update((s.name, s) for s in specs)
    project = workspace / PROJECT_FILE if workspace is not None else None
    if project is not None and project.is_file():
        if trusted:
            try:
                specs, problems = read_file(project, environ)
            except McpConfigError as e:
                specs, problems = [], [str(e)]
            out.notices += problems
            by_name.update((s.name, s) for s in specs)
        else:
            out.notices.append(f"{one_line(str(project))} was not read: this folder is not trusted, and a "
                               f"repository may not start programs. Trust it (--trust) to use its MCP servers.")
    for path in flag_files:
        specs, problems = read_file(path, environ)
        if problems:
            raise McpConfigError(problems[0])
        by_name.update((s.name, s) for s in specs)
    out.specs = list(by_name.values())
    for spec in out.specs:
        register_secret(*spec.secrets)   # scrubbed from the log, stdout and tool results from now on
    return out
