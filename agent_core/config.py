"""Configuration: one `Config` from five sources, first one that sets a value wins:

    CLI flags  >  environment  >  `.env` in the workspace  >  user config file  >  defaults

The `.env` file is read with python-dotenv's `dotenv_values` and never copied into `os.environ`;
it is read without interpolation, so `${ANTHROPIC_API_KEY}` in a repository's `.env` stays those
characters and never pulls a value out of the user's environment.
It belongs to the repository, not to the user: the settings in `trust.SENSITIVE` (API key, base
URL, allowed tools, state folder) are taken from it only when the user trusted the workspace, and
are otherwise reported in `Config.ignored`. The user file is TOML at `$CTXTUI_CONFIG`, else
`$XDG_CONFIG_HOME/ctxtui/config.toml`, else `~/.config/ctxtui/config.toml`; its keys are the
`Config` field names (`[keymap]` is a table, `trusted_workspaces` a list of folders).
An empty environment value counts as unset. A bad value raises `ConfigError` naming the variable,
flag or file key and the form expected; the CLI turns it into exit code 2.
"""
from __future__ import annotations

import argparse
import io
import math
import os
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Callable, Mapping

from dotenv import dotenv_values
from compaction.accounting.budget import ContextBudget
from compaction.presets import DEFAULT_PRESET, PRESETS, preset
from compaction.scrub import redact_url, register_secret

from agent_core.config_error import ConfigError
from agent_core.context_budget import BudgetSettings, budget_for, limits_for
from agent_core.os_sandbox.settings import SandboxSettings, parse_mode, parse_network, parse_paths
from agent_core.regular_file import NotRegularFile, open_regular
from agent_core.providers.models_info import DEFAULT_MODEL, DEMO_CONTEXT_WINDOW, DEMO_MODEL
from agent_core.providers.server_context import ENGINES
from agent_core.sessions.paths import project_state_dir, state_root
from agent_core.tool_spec import TOOL_NAMES, is_mcp_name
from agent_core.security.credentials import SECRET_ENV_VARS, looks_like_credential, with_held
from agent_core.security.visible_text import one_line
from agent_core.security.trust import SENSITIVE, how_to_trust, is_trusted

MIN_CONTEXT_WINDOW = 1_000
MAX_USER_FILE = 1 << 20              # a config file larger than this is not a config file


# ---------------------------------------------------------------- parsers (raise ValueError)

def _text(v: Any) -> str:
    if not isinstance(v, str) or not v.strip():
        raise ValueError
    return v.strip()


def _int_at_least(lo: int) -> Callable[[Any], int]:
    def parse(v: Any) -> int:
        if isinstance(v, bool):
            raise ValueError
        if isinstance(v, str):
            v = int(v.strip().replace("_", "").replace(",", ""))
        if not isinstance(v, int) or v < lo:
            raise ValueError
        return v
    return parse


def _number(v: Any) -> float:
    if isinstance(v, bool):
        raise ValueError
    if isinstance(v, str):
        v = float(v.strip())
    if not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ValueError
    return float(v)


def _positive(v: Any) -> float:
    f = _number(v)
    if f <= 0:
        raise ValueError
    return f


def _percent(v: Any) -> float:
    f = _number(v.strip().rstrip("%") if isinstance(v, str) else v)
    if not 0 < f <= 100:
        raise ValueError
    return f


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _bool(v: Any) -> bool:
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v.strip().lower() in _TRUE | _FALSE:
        return v.strip().lower() in _TRUE
    raise ValueError


def _url(v: Any) -> str:
    s = _text(v)
    if not s.startswith(("http://", "https://")) or len(s) <= len("https://"):
        raise ValueError
    return s.rstrip("/")


def _path(v: Any) -> Path:
    if isinstance(v, Path):
        return v
    return Path(_text(v)).expanduser()


def _tools(v: Any) -> tuple[str, ...]:
    """Comma-separated names (a list of such strings from repeated --allow); `all` means every tool."""
    items = [v] if isinstance(v, str) else list(v)
    names: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise ValueError
        names += [n.strip() for n in item.split(",") if n.strip()]
    if "all" in names:
        return TOOL_NAMES
    if not names or any(n not in TOOL_NAMES and not is_mcp_name(n) for n in names):
        raise ValueError
    return tuple(dict.fromkeys(names))


def _paths(v: Any) -> tuple[Path, ...]:
    """One path, comma-separated paths, or a list of them (repeated --mcp-config)."""
    items = [v] if isinstance(v, (str, Path)) else list(v)
    out = []
    for item in items:
        parts = [item] if isinstance(item, Path) else [p.strip() for p in _text(item).split(",") if p.strip()]
        out += [_path(p) for p in parts]
    if not out:
        raise ValueError
    return tuple(out)


CACHE_TTLS = ("5m", "1h")


def _cache_ttl(v: Any) -> str:
    s = _text(v).lower()
    if s not in CACHE_TTLS:
        raise ValueError
    return s


def _policy(v: Any) -> str:
    s = _text(v).lower()
    if s not in PRESETS:
        raise ValueError
    return s


def _engine(v: Any) -> str:
    s = _text(v).lower()
    if s not in ENGINES:
        raise ValueError
    return s


def _keymap(v: Any) -> dict[str, str]:
    if not isinstance(v, Mapping) or not all(isinstance(k, str) and isinstance(x, str) and x for k, x in v.items()):
        raise ValueError
    return dict(v)


# ---------------------------------------------------------------- the settings table

@dataclass(frozen=True)
class Setting:
    name: str                 # Config field, TOML key
    env: str | None           # environment / .env variable
    flag: str | None          # argparse dest of the CLI flag, if the CLI has (or may get) one
    form: str                 # the expected form, for error messages and docs
    meaning: str
    parse: Callable[[Any], Any]
    also_env: tuple[str, ...] = ()   # further variables read, after `env`, when it is unset

    @property
    def flag_name(self) -> str:
        return "--" + (self.flag or self.name).rstrip("_").replace("_", "-")


_TOOLS_FORM = ("tool names separated by commas, from " + ", ".join(TOOL_NAMES)
               + " (or all), or an MCP server's mcp__SERVER or mcp__SERVER__TOOL")

SETTINGS: tuple[Setting, ...] = (
    Setting("api_key", "ANTHROPIC_API_KEY", None, "a non-empty API key",
            "Anthropic API key; without one the offline demo model is used", _text),
    Setting("base_url", "ANTHROPIC_BASE_URL", "base_url", "an http:// or https:// URL",
            "Messages API endpoint (a proxy or a test server)", _url),
    Setting("model", "CTXTUI_MODEL", "model", "a model id, or demo",
            f"model to run (default {DEFAULT_MODEL}, or demo when no API key is set)", _text),
    Setting("context_window", "CTXTUI_CONTEXT_WINDOW", "context_window",
            f"a whole number >= {MIN_CONTEXT_WINDOW}",
            f"context window in tokens (default: the model's, from genai-prices; demo {DEMO_CONTEXT_WINDOW:,})",
            _int_at_least(MIN_CONTEXT_WINDOW)),
    Setting("long_context", "CTXTUI_1M_CONTEXT", "long_context", "a boolean (1/0, true/false, yes/no, on/off)",
            "use the 1M-token context of a model where it is opt-in (Opus 4.6, Sonnet 4.6, Sonnet 4.5 and 4): "
            "a 1,000,000-token window, and requests carry the API's 1M beta header (default off: 200,000)", _bool),
    Setting("max_output_tokens", "CTXTUI_MAX_OUTPUT_TOKENS", "max_output_tokens", "a whole number >= 1",
            "max tokens per model reply; also the room reserved for a summary (default 32000)", _int_at_least(1)),
    Setting("autocompact_pct", "CTXTUI_AUTOCOMPACT_PCT", "autocompact_pct", "a number in (0, 100]",
            "auto-compact at this percent of the effective window, above the default threshold or below it (at "
            "most the blocking limit less a margin); /threshold sets it live and keeps it per model",
            _percent),
    Setting("disable_autocompact", "CTXTUI_DISABLE_AUTOCOMPACT", "disable_autocompact",
            "a boolean (1/0, true/false, yes/no, on/off)", "turn automatic compaction off", _bool),
    Setting("disable_collapse", "CTXTUI_DISABLE_COLLAPSE", "disable_collapse",
            "a boolean (1/0, true/false, yes/no, on/off)",
            "turn context collapse off, so summaries (session memory, auto-compact) take over at the threshold",
            _bool),
    Setting("policy", "CTXTUI_POLICY", "policy", "one of " + ", ".join(PRESETS),
            "the compaction policy (default ctxtui): "
            + "; ".join(f"{p.name} = {p.about}" for p in PRESETS.values())
            + ". `ctxtui replay` replays a log under each, to compare", _policy),
    Setting("cache_ttl", "CTXTUI_CACHE_TTL", "cache_ttl", "5m or 1h",
            "how long the prompt cache keeps the conversation (default 5m); 1h writes cost 2x input "
            "instead of 1.25x, worth it when you pause longer than 5 minutes between prompts", _cache_ttl),
    Setting("engine", "CTXTUI_ENGINE", "engine", "local, server or hybrid",
            "who manages the context (default local): local = ctxtui's own layers and summary; server = the "
            "API's context editing and compaction (betas), ctxtui keeping only the tool-result budget and the "
            "blocking limit; hybrid = ctxtui's cheap layers, then the API's compaction instead of a summary call. "
            "server and hybrid need a model the API's compaction supports (Claude Opus 4.7 or 4.6, Sonnet 4.6, "
            "Mythos Preview) and an auto-compact threshold of at least 50,000 tokens (a window of 60,000 or "
            "more); otherwise the session runs local and says why at start",
            _engine),
    Setting("home", "CTXTUI_HOME", "home", "a folder path",
            "ctxtui's state folder (sessions, transcripts, tool results, one folder per workspace); "
            "default $XDG_STATE_HOME/ctxtui or ~/.local/state/ctxtui", _path),
    Setting("max_turns", "CTXTUI_MAX_TURNS", "max_turns", "a whole number >= 1",
            "stop a run after this many model calls (default: no limit)", _int_at_least(1)),
    Setting("max_budget_usd", "CTXTUI_MAX_BUDGET_USD", "max_budget_usd", "a number of dollars > 0",
            "stop when the session cost reaches this (default: no limit)", _positive),
    Setting("allow", "CTXTUI_ALLOW", "allow", _TOOLS_FORM,
            "tools allowed without asking (headless denies write/edit/bash unless allowed)", _tools),
    Setting("mcp_config", "CTXTUI_MCP_CONFIG", "mcp_config", "a file path (several: comma-separated)",
            "MCP servers to start, in Claude Code's format ({\"mcpServers\": {NAME: {command, args, env} or "
            "{type: http, url, headers}}}); --mcp-config may be repeated", _paths),
    Setting("mcp_timeout", "CTXTUI_MCP_TIMEOUT", "mcp_timeout", "a number of seconds > 0",
            "how long an MCP server may take to start and list its tools (default 30)", _positive),
    Setting("bash_timeout", "CTXTUI_BASH_TIMEOUT", "bash_timeout", "a number of seconds > 0",
            "default timeout of the bash tool (default 120)", _positive),
    Setting("tool_timeout", "CTXTUI_TOOL_TIMEOUT", "tool_timeout", "a number of seconds > 0",
            "deadline of every other tool call (read, write, edit, glob, grep; default 120)", _positive),
    Setting("api_connect_timeout", "CTXTUI_API_CONNECT_TIMEOUT", "api_connect_timeout", "a number of seconds > 0",
            "give up connecting to the API after this long (default 10)", _positive),
    Setting("api_idle_timeout", "CTXTUI_API_IDLE_TIMEOUT", "api_idle_timeout", "a number of seconds > 0",
            "give up when the API sends nothing for this long, before or during an answer (default 120)",
            _positive),
    Setting("sandbox", "CTXTUI_SANDBOX", "sandbox", "auto-allow, ask or off",
            "run bash and shell mode in the OS sandbox (bubblewrap; docs/security.md): auto-allow = sandboxed "
            "commands run without asking, ask = they still ask, off = unconfined (default off); /sandbox sets it live",
            parse_mode),
    Setting("sandbox_network", "CTXTUI_SANDBOX_NETWORK", "sandbox_network", "none, all, or hosts separated by commas",
            "what a sandboxed command may reach: none (default), all, or only these hosts (example.com, "
            "*.example.com) through a filtering proxy", parse_network),
    Setting("sandbox_hide", "CTXTUI_SANDBOX_HIDE", None, "absolute paths separated by commas",
            "more paths a sandboxed command cannot see (besides ~/.ssh, ~/.aws, ~/.gnupg, ~/.config/gh, ~/.netrc, "
            "ctxtui's state and others)", parse_paths),
    Setting("sandbox_write", "CTXTUI_SANDBOX_WRITE", None, "absolute paths separated by commas",
            "more folders a sandboxed command may write (a cache, say); the workspace and a private /tmp always",
            parse_paths),
    Setting("theme", "CTXTUI_THEME", "theme", "a Textual theme name", "TUI colour theme", _text),
    Setting("otel_endpoint", "CTXTUI_OTEL_ENDPOINT", None, "an http:// or https:// URL",
            "export usage, cost, compactions and the context figure with OpenTelemetry (OTLP/HTTP) to this "
            "collector; /v1/traces and /v1/metrics are appended (also read from OTEL_EXPORTER_OTLP_ENDPOINT; "
            "default: no export, docs/telemetry.md)", _url, also_env=("OTEL_EXPORTER_OTLP_ENDPOINT",)),
    Setting("otel_headers", "OTEL_EXPORTER_OTLP_HEADERS", None, "key=value pairs separated by commas",
            "headers sent with each export (e.g. authorization=Bearer%20TOKEN); a secret: never written, "
            "never shown, kept from the tools", _text),
    Setting("otel_service_name", "OTEL_SERVICE_NAME", None, "a non-empty name",
            "service.name of the exported telemetry (default ctxtui)", _text),
    Setting("keymap", None, None, "a table of action = \"key\"",
            "key bindings to override (user config file only)", _keymap),
)
_BY_NAME = {s.name: s for s in SETTINGS}

# (variable, expected form, meaning) for README and --help.
VARIABLES: list[tuple[str, str, str]] = [(s.env, s.form, s.meaning) for s in SETTINGS if s.env] + [
    ("CTXTUI_CONFIG", "a file path", "user config file (default $XDG_CONFIG_HOME/ctxtui/config.toml, "
                                     "else ~/.config/ctxtui/config.toml)"),
]


def format_variables(width: int = 28) -> str:
    """The VARIABLES table as plain text, for `--help` epilogs and the README."""
    return "\n".join(f"  {name:<{width}} {meaning} [{form}]" for name, form, meaning in VARIABLES)


# ---------------------------------------------------------------- Config

@dataclass
class Config:
    """Everything a session needs to start. `sources` says where each value came from
    (flag, env, .env, user file or default), for `ctxtui --help`-style diagnostics."""
    model: str = DEMO_MODEL
    api_key: str | None = field(default=None, repr=False)
    base_url: str | None = None
    context_window: int | None = None          # None: the model's own (see resolved_context_window)
    long_context: bool = False                 # the 1M context where it is opt-in (models_info's window rule)
    max_output_tokens: int = 32_000
    autocompact_pct: float | None = None
    disable_autocompact: bool = False
    disable_collapse: bool = False
    policy: str = DEFAULT_PRESET               # the compaction preset (compaction/presets.py)
    cache_ttl: str = "5m"                      # prompt-cache TTL the client asks for: 5m | 1h
    engine: str = "local"                      # who manages the context: local | server | hybrid
    home: Path | None = None                   # the state root (CTXTUI_HOME); None = state_root()
    workspace: Path = field(default_factory=Path.cwd)
    max_turns: int | None = None
    max_budget_usd: float | None = None
    allow: tuple[str, ...] = ()
    mcp_config: tuple[Path, ...] = ()          # --mcp-config files (Claude Code's format)
    mcp_servers: dict[str, Any] = field(default_factory=dict, repr=False)   # [mcp_servers.NAME] of the user file
    mcp_timeout: float = 30.0
    bash_timeout: float = 120.0
    tool_timeout: float = 120.0
    api_connect_timeout: float = 10.0
    api_idle_timeout: float = 120.0
    theme: str | None = None
    sandbox: str = "off"                       # the OS sandbox for bash: auto-allow | ask | off
    sandbox_network: str | tuple[str, ...] = "none"
    sandbox_hide: tuple[Path, ...] = ()
    sandbox_write: tuple[Path, ...] = ()
    otel_endpoint: str | None = None           # OTLP/HTTP collector (agent_core/telemetry); None: no export
    otel_headers: str | None = field(default=None, repr=False)   # may hold a token: a secret
    otel_service_name: str = "ctxtui"
    keymap: dict[str, str] = field(default_factory=dict)
    config_file: Path | None = None            # the user file that was read, if any
    trusted: bool = False                      # the user trusts this workspace's .env
    ignored: tuple[str, ...] = ()              # .env variables ignored because the workspace is untrusted
    dotenv_path: Path | None = None
    sources: dict[str, str] = field(default_factory=dict, repr=False, compare=False)
    # Values the user set inside the TUI, by what they typed (model: "/model"): errors name that
    typed: dict[str, str] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.workspace = Path(self.workspace)
        self.home = Path(self.home) if self.home is not None else state_root()

    @property
    def state_dir(self) -> Path:
        """This workspace's folder under the state root: sessions, transcripts, tool results."""
        return project_state_dir(Path(self.home), self.workspace)

    def ignored_message(self) -> str | None:
        """What was ignored from an untrusted `.env`, and how to trust it; None when nothing was."""
        if not self.ignored:
            return None
        return (f"ignored {', '.join(self.ignored)} from {self.dotenv_path}: this folder is not trusted, and a "
                f"repository's .env may not choose the API endpoint or key, allow tools, move ctxtui's state, "
                f"or send telemetry anywhere. "
                + how_to_trust(self.workspace))

    @property
    def is_demo(self) -> bool:
        return self.model == DEMO_MODEL

    def budget_settings(self) -> BudgetSettings:
        """The budget choices in this config; max output counts only when the user set it (the
        demo always caps it)."""
        explicit_out = self.is_demo or self.sources.get("max_output_tokens") not in (None, "default")
        return BudgetSettings(context_window=self.context_window,
                              max_output_tokens=self.max_output_tokens if explicit_out else None,
                              autocompact_enabled=not self.disable_autocompact and preset(self.policy).autocompact,
                              autocompact_pct=self.autocompact_pct,
                              long_context=self.long_context, policy=self.policy)

    def resolved_context_window(self) -> int:
        """The window to budget for: the override, else the demo's, else genai-prices' figure."""
        return limits_for(self.model, self.budget_settings()).context_window

    def budget(self) -> ContextBudget:
        """The compaction thresholds the loop uses for this config."""
        return budget_for(self.model, self.budget_settings()).budget

    def sandbox_settings(self) -> SandboxSettings:
        return SandboxSettings(self.sandbox, self.sandbox_network, self.sandbox_hide, self.sandbox_write)

    def secret_values(self) -> list[str]:
        """Values that must never be written anywhere (registered with the scrubber at load)."""
        return [v for v in (self.api_key, self.otel_headers) if v]

    def public_dict(self) -> dict[str, Any]:
        """The config without secrets, JSON-ready (for the session log's meta line)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            if f.name in ("api_key", "otel_headers", "sources", "mcp_servers"):   # headers and env may hold tokens
                continue
            v = getattr(self, f.name)
            if f.name == "mcp_config":
                v = [str(p) for p in v]
            out[f.name] = str(v) if isinstance(v, Path) else [str(x) for x in v] if isinstance(v, tuple) else v
        out["base_url"] = redact_url(self.base_url)
        out["otel_endpoint"] = redact_url(self.otel_endpoint)
        out["has_api_key"] = bool(self.api_key)
        return out


# ---------------------------------------------------------------- loading

def user_config_path(environ: Mapping[str, str]) -> Path:
    if environ.get("CTXTUI_CONFIG"):
        return Path(environ["CTXTUI_CONFIG"]).expanduser()
    base = environ.get("XDG_CONFIG_HOME")
    if base:
        return Path(base).expanduser() / "ctxtui" / "config.toml"
    home = environ.get("HOME")
    return (Path(home) if home else Path.home()) / ".config" / "ctxtui" / "config.toml"


def _read_small_file(path: Path, what: str) -> bytes | None:
    """The bytes of a regular file of at most MAX_USER_FILE; None when it does not exist. A FIFO,
    a device or /dev/zero is refused without being read (agent_core/regular_file.py)."""
    try:
        with open_regular(path) as f:
            size = os.fstat(f.fileno()).st_size
            if size > MAX_USER_FILE:
                raise ConfigError(f"{path}: the {what} is {size:,} bytes; a config file is at most "
                                  f"{MAX_USER_FILE:,} bytes. Check the path.")
            return f.read(MAX_USER_FILE + 1)
    except FileNotFoundError:
        return None
    except NotRegularFile as e:
        raise ConfigError(f"{path}: the {what} must be a regular file (this is {e.kind})") from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot read the {what}: {e.strerror or e}") from None


PCT_BY_MODEL = "autocompact_pct_by_model"    # {model: pct}: the threshold /threshold keeps for each model
USER_FILE_ONLY = {"trusted_workspaces", PCT_BY_MODEL, "mcp_servers"}


def _read_user_file(path: Path) -> dict[str, Any]:
    raw = _read_small_file(path, "config file (CTXTUI_CONFIG)")
    if raw is None:
        return {}
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: the config file is not UTF-8 text; it must be TOML such as "
                          f"`context_window = 100000`") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: the config file is not valid TOML: {e}") from None
    trusted = data.get("trusted_workspaces", [])
    if not isinstance(trusted, list) or not all(isinstance(t, str) for t in trusted):
        raise ConfigError(f"trusted_workspaces (in {path}) must be a list of folder paths")
    by_model = data.get(PCT_BY_MODEL, {})
    if not isinstance(by_model, dict):
        raise ConfigError(f"{PCT_BY_MODEL} (in {path}) must be a table of model = percentage, "
                          f"e.g. [{PCT_BY_MODEL}] followed by \"claude-sonnet-4-6\" = 70")
    if not isinstance(data.get("mcp_servers", {}), dict):
        raise ConfigError(f"mcp_servers (in {path}) must be a table of servers, e.g. [mcp_servers.files] followed "
                          f"by command = \"npx\" and args = [\"-y\", \"some-mcp-server\"]")
    unknown = sorted(set(data) - set(_BY_NAME) - USER_FILE_ONLY)
    if unknown:
        raise ConfigError(f"{path}: unknown setting {unknown[0]!r}; known settings: {', '.join(_BY_NAME)}")
    return data


def _read_dotenv(workspace: Path) -> tuple[dict[str, str], Path]:
    path = workspace / ".env"
    raw = _read_small_file(path, ".env file")
    if raw is None:
        return {}, path
    try:
        values = dotenv_values(stream=io.StringIO(raw.decode("utf-8")), interpolate=False)
    except (UnicodeDecodeError, ValueError) as e:
        raise ConfigError(f"{path}: cannot read the .env file: {e}") from None
    return {k: v for k, v in values.items() if v is not None}, path


def _cli_values(cli: dict | argparse.Namespace | None) -> dict[str, Any]:
    if cli is None:
        return {}
    raw = vars(cli) if isinstance(cli, argparse.Namespace) else dict(cli)
    out = {}
    for s in SETTINGS:
        if s.flag is None:
            continue
        v = raw.get(s.flag, raw.get(s.name))
        if v is None or v == [] or v is False and s.parse is _bool:
            continue  # not given (argparse defaults: None, [], store_true False)
        out[s.name] = v
    return out


def _parse(s: Setting, value: Any, where: str) -> Any:
    try:
        return s.parse(value)
    except (ValueError, TypeError, AttributeError):
        # Never echo a secret: the key itself, or anything shaped like a token (a .env may hold one
        # by mistake, or on purpose to get it printed). What is shown is made visible, not obeyed.
        secret = (s.name in ("api_key", "otel_headers") or looks_like_credential(value)
                  or s.parse is _url and "@" in str(value))          # a URL's user:password@
        shown = "a value that is not shown: it looks like a credential" if secret else one_line(repr(value))
        raise ConfigError(f"{one_line(where)} must be {s.form} (got {shown})") from None


def load_config(cli: dict | argparse.Namespace | None = None, environ: Mapping[str, str] | None = None,
                workspace: Path | None = None, typed: Mapping[str, str] | None = None) -> Config:
    """Build the Config; raises ConfigError with a message the user can act on. The secrets it
    finds are registered with the scrubber, so nothing written afterwards can hold them. `typed`:
    the CLI values the user gave in the TUI instead, by the command ({"model": "/model"}), so an
    error names what they typed, not a flag they never used."""
    environ = with_held(os.environ) if environ is None else environ
    register_secret(*(environ.get(v) for v in SECRET_ENV_VARS))   # before any message can quote one
    cli_vals = _cli_values(cli)
    raw_cli = (vars(cli) if isinstance(cli, argparse.Namespace) else dict(cli or {}))

    ws_raw = workspace if workspace is not None else raw_cli.get("workspace")
    ws = Path(ws_raw).expanduser() if ws_raw else Path.cwd()
    if not ws.is_dir():
        raise ConfigError(f"--workspace must be an existing folder (got {str(ws_raw or ws)!r})")
    ws = ws.resolve()

    dotenv, dotenv_path = _read_dotenv(ws)
    user_path = user_config_path(environ)
    user = _read_user_file(user_path)
    trusted = bool(raw_cli.get("trust")) or is_trusted(ws, environ, user.get("trusted_workspaces", ()))

    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    where: dict[str, str] = {}
    ignored: list[str] = []
    for s in SETTINGS:
        names = [n for n in (s.env, *s.also_env) if n]
        in_env = next((n for n in names if (environ.get(n) or "").strip()), None)
        in_dotenv = next((n for n in names if (dotenv.get(n) or "").strip()), None)
        if s.name in cli_vals:
            raw, sources[s.name], where[s.name] = cli_vals[s.name], "flag", (typed or {}).get(s.name, s.flag_name)
        elif in_env:
            raw, sources[s.name], where[s.name] = environ[in_env], "env", in_env
        elif in_dotenv and s.name in SENSITIVE and not trusted:
            ignored.append(in_dotenv)
            continue
        elif in_dotenv:
            raw, sources[s.name], where[s.name] = dotenv[in_dotenv], ".env", f"{in_dotenv} (in {dotenv_path})"
        elif s.name in user:
            raw, sources[s.name], where[s.name] = user[s.name], "user file", f"{s.name} (in {user_path})"
        else:
            continue
        values[s.name] = _parse(s, raw, where[s.name])

    register_secret(values.get("api_key"), values.get("otel_headers"), *(environ.get(v) for v in SECRET_ENV_VARS))
    for url in ("base_url", "otel_endpoint"):
        if values.get(url):
            redact_url(values[url])            # registers a password in the URL as a secret
    if "model" not in values:
        values["model"] = DEFAULT_MODEL if values.get("api_key") else DEMO_MODEL
    elif values["model"].lower() == DEMO_MODEL:
        values["model"] = DEMO_MODEL
    elif not values.get("api_key") and where["model"] == "/model":
        raise ConfigError(f"/model {values['model']} needs an API key, but ANTHROPIC_API_KEY is not set. Set it "
                          f"(environment, or the user config file) and start ctxtui again, or stay offline "
                          f"with /model demo.")
    elif not values.get("api_key"):
        raise ConfigError(f"{where['model']} is {values['model']!r}, which needs an API key, but ANTHROPIC_API_KEY "
                          f"is not set. Set it (environment, or the user config file), or use --model demo "
                          f"to stay offline.")
    by_model = user.get(PCT_BY_MODEL) or {}
    if sources.get("autocompact_pct") in (None, "user file") and values["model"] in by_model:
        # the threshold kept for this model (/threshold) is more specific than the file's own
        at = f"{PCT_BY_MODEL}.{values['model']} (in {user_path})"
        values["autocompact_pct"] = _parse(_BY_NAME["autocompact_pct"], by_model[values["model"]], at)
        sources["autocompact_pct"], where["autocompact_pct"] = "user file, this model", at
    home = values.get("home")
    if home is not None:
        home = values["home"] = home.absolute()
        if home.exists() and not home.is_dir():
            raise ConfigError(f"{where['home']} must be {_BY_NAME['home'].form} (got {str(home)!r}, which is a file)")
    else:
        values["home"] = state_root(environ)
    for s in SETTINGS:
        sources.setdefault(s.name, "default")

    values["mcp_servers"] = dict(user.get("mcp_servers") or {})
    typed = {k: v for k, v in (typed or {}).items() if sources.get(k) == "flag"}
    return Config(workspace=ws, config_file=user_path if user else None, sources=sources, typed=typed, trusted=trusted,
                  ignored=tuple(ignored), dotenv_path=dotenv_path if dotenv else None, **values)
