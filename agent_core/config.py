"""Configuration: one `Config` from five sources, first one that sets a value wins:

    CLI flags  >  environment  >  `.env` in the workspace  >  user config file  >  defaults

What each setting is (key, flag, variable, default, form, parser) is stated once, in
agent_core/settings_table.py; this module reads the sources and walks that table.
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
import os
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping

from dotenv import dotenv_values
from compaction.accounting.budget import ContextBudget
from compaction.presets import preset
from compaction.scrub import redact_url, register_secret

from agent_core import setting_parsers
from agent_core.config_error import ConfigError
from agent_core.context_budget import BudgetSettings, budget_for, limits_for
from agent_core.os_sandbox.settings import SandboxSettings
from agent_core.regular_file import NotRegularFile, open_regular
from agent_core.providers.models_info import DEFAULT_MODEL, DEMO_CONTEXT_WINDOW, DEMO_MODEL
from agent_core.sessions.paths import project_state_dir, state_root
from agent_core.settings_table import (BY_NAME, SECRET_SETTINGS, SETTINGS, VARIABLES, Setting, default,
                                       format_variables)
from agent_core.security.credentials import SECRET_ENV_VARS, looks_like_credential, with_held
from agent_core.security.visible_text import one_line
from agent_core.security.trust import SENSITIVE, how_to_trust, is_trusted

# Re-exported: what callers of this module have always imported from it.
__all__ = ["DEFAULT_MODEL", "DEMO_CONTEXT_WINDOW", "PCT_BY_MODEL", "SETTINGS", "VARIABLES", "Config", "ConfigError",
           "Setting", "format_variables", "load_config", "user_config_path"]

MAX_USER_FILE = 1 << 20              # a config file larger than this is not a config file


# ---------------------------------------------------------------- Config

@dataclass
class Config:
    """Everything a session needs to start. `sources` says where each value came from
    (flag, env, .env, user file or default), for `ctxtui --help`-style diagnostics. The
    settings' defaults are the table's."""
    model: str = default("model")
    api_key: str | None = field(default=default("api_key"), repr=False)
    base_url: str | None = default("base_url")
    context_window: int | None = default("context_window")   # None: the model's own (resolved_context_window)
    long_context: bool = default("long_context")     # the 1M context where it is opt-in (models_info's window rule)
    max_output_tokens: int = default("max_output_tokens")
    autocompact_pct: float | None = default("autocompact_pct")
    disable_autocompact: bool = default("disable_autocompact")
    disable_collapse: bool = default("disable_collapse")
    policy: str = default("policy")                  # the compaction preset (compaction/presets.py)
    cache_ttl: str = default("cache_ttl")            # prompt-cache TTL the client asks for
    engine: str = default("engine")                  # who manages the context
    home: Path = field(default_factory=state_root)   # the state root (CTXTUI_HOME)
    workspace: Path = field(default_factory=Path.cwd)
    max_turns: int | None = default("max_turns")
    max_budget_usd: float | None = default("max_budget_usd")
    allow: tuple[str, ...] = default("allow")
    mcp_config: tuple[Path, ...] = default("mcp_config")     # --mcp-config files (Claude Code's format)
    mcp_servers: dict[str, Any] = field(default_factory=dict, repr=False)   # [mcp_servers.NAME] of the user file
    mcp_timeout: float = default("mcp_timeout")
    bash_timeout: float = default("bash_timeout")
    tool_timeout: float = default("tool_timeout")
    api_connect_timeout: float = default("api_connect_timeout")
    api_idle_timeout: float = default("api_idle_timeout")
    theme: str | None = default("theme")
    sandbox: str = default("sandbox")                # the OS sandbox for bash: auto-allow | ask | off
    sandbox_network: str | tuple[str, ...] = default("sandbox_network")
    sandbox_hide: tuple[Path, ...] = default("sandbox_hide")
    sandbox_write: tuple[Path, ...] = default("sandbox_write")
    otel_endpoint: str | None = default("otel_endpoint")    # OTLP/HTTP collector (agent_core/telemetry)
    otel_headers: str | None = field(default=default("otel_headers"), repr=False)   # may hold a token: a secret
    otel_service_name: str = default("otel_service_name")
    keymap: dict[str, str] = field(default_factory=lambda: dict(default("keymap")))
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
        return project_state_dir(self.home, self.workspace)

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
        return [v for name in SECRET_SETTINGS if (v := getattr(self, name))]

    def public_dict(self) -> dict[str, Any]:
        """The config without secrets, JSON-ready (for the session log's meta line)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            if f.name in (*SECRET_SETTINGS, "sources", "mcp_servers"):   # headers and env may hold tokens
                continue
            v = getattr(self, f.name)
            if f.name == "mcp_config":
                v = [str(p) for p in v]
            out[f.name] = str(v) if isinstance(v, Path) else [str(x) for x in v] if isinstance(v, tuple) else v
        out["base_url"] = redact_url(self.base_url)
        out["otel_endpoint"] = redact_url(self.otel_endpoint)
        out["has_api_key"] = bool(self.api_key)
        return out


# ---------------------------------------------------------------- the files

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
    _check_user_file_tables(data, path)
    unknown = sorted(set(data) - set(BY_NAME) - USER_FILE_ONLY)
    if unknown:
        raise ConfigError(f"{path}: unknown setting {unknown[0]!r}; known settings: {', '.join(BY_NAME)}")
    return data


def _check_user_file_tables(data: Mapping[str, Any], path: Path) -> None:
    """The user file's own keys, which are no setting: each of its form."""
    trusted = data.get("trusted_workspaces", [])
    if not isinstance(trusted, list) or not all(isinstance(t, str) for t in trusted):
        raise ConfigError(f"trusted_workspaces (in {path}) must be a list of folder paths")
    if not isinstance(data.get(PCT_BY_MODEL, {}), dict):
        raise ConfigError(f"{PCT_BY_MODEL} (in {path}) must be a table of model = percentage, "
                          f"e.g. [{PCT_BY_MODEL}] followed by \"claude-sonnet-4-6\" = 70")
    if not isinstance(data.get("mcp_servers", {}), dict):
        raise ConfigError(f"mcp_servers (in {path}) must be a table of servers, e.g. [mcp_servers.files] followed "
                          f"by command = \"npx\" and args = [\"-y\", \"some-mcp-server\"]")


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


# ---------------------------------------------------------------- the sources, walked

IGNORED = "ignored"     # the source of a value an untrusted .env gave for a SENSITIVE setting


@dataclass(frozen=True)
class _Found:
    raw: Any
    source: str      # flag, env, .env, user file (or IGNORED)
    where: str       # what a message names: the flag (or what was typed), the variable, the file key


def _first_set(names: tuple[str, ...], values: Mapping[str, str]) -> str | None:
    """The first of `names` set to something other than blanks (an empty value counts as unset)."""
    return next((n for n in names if (values.get(n) or "").strip()), None)


def _cli_values(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The setting flags that were given: argparse's defaults (None, [], a switch's False) are not."""
    out = {}
    for s in SETTINGS:
        v = raw.get(s.name) if s.flag is not None else None
        if s.flag is None or v is None or v == [] or (v is False and s.flag.kind == "switch"):
            continue
        out[s.name] = v
    return out


@dataclass(frozen=True)
class _Sources:
    """The four places a setting can come from, read once; `find` asks them in precedence order."""
    cli: Mapping[str, Any]
    typed: Mapping[str, str]
    environ: Mapping[str, str]
    dotenv: Mapping[str, str]
    dotenv_path: Path
    user: Mapping[str, Any]
    user_path: Path
    trusted: bool

    def find(self, s: Setting) -> _Found | None:
        for look in (self._flag, self._env, self._dotenv, self._user_file):
            if (found := look(s)) is not None:
                return found
        return None

    def _flag(self, s: Setting) -> _Found | None:
        if s.name not in self.cli:
            return None
        return _Found(self.cli[s.name], "flag", self.typed.get(s.name) or s.flag_name or s.name)

    def _env(self, s: Setting) -> _Found | None:
        var = _first_set(s.variables, self.environ)
        return None if var is None else _Found(self.environ[var], "env", var)

    def _dotenv(self, s: Setting) -> _Found | None:
        """A repository's .env: a SENSITIVE setting only when the folder is trusted; otherwise the
        variable is reported as ignored, and the setting keeps its default."""
        var = _first_set(s.variables, self.dotenv)
        if var is None:
            return None
        if s.name in SENSITIVE and not self.trusted:
            return _Found(None, IGNORED, var)
        return _Found(self.dotenv[var], ".env", f"{var} (in {self.dotenv_path})")

    def _user_file(self, s: Setting) -> _Found | None:
        if s.name not in self.user:
            return None
        return _Found(self.user[s.name], "user file", f"{s.name} (in {self.user_path})")


def _read_sources(raw_cli: Mapping[str, Any], environ: Mapping[str, str], ws: Path,
                  typed: Mapping[str, str]) -> _Sources:
    dotenv, dotenv_path = _read_dotenv(ws)
    user_path = user_config_path(environ)
    user = _read_user_file(user_path)
    trusted = bool(raw_cli.get("trust")) or is_trusted(ws, environ, user.get("trusted_workspaces", ()))
    return _Sources(_cli_values(raw_cli), typed, environ, dotenv, dotenv_path, user, user_path, trusted)


@dataclass
class _Chosen:
    """The value of each setting that some source set, parsed; where it came from."""
    values: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    where: dict[str, str] = field(default_factory=dict)
    ignored: list[str] = field(default_factory=list)

    def take(self, s: Setting, found: _Found) -> None:
        if found.source == IGNORED:
            self.ignored.append(found.where)
            return
        self.values[s.name] = _parse(s, found.raw, found.where)
        self.sources[s.name], self.where[s.name] = found.source, found.where


def _parse(s: Setting, value: Any, where: str) -> Any:
    try:
        return s.parse(value)
    except (ValueError, TypeError, AttributeError):
        # Never echo a secret: the key itself, or anything shaped like a token (a .env may hold one
        # by mistake, or on purpose to get it printed). What is shown is made visible, not obeyed.
        secret = (s.secret or looks_like_credential(value)
                  or s.parse is setting_parsers.url and "@" in str(value))          # a URL's user:password@
        shown = "a value that is not shown: it looks like a credential" if secret else one_line(repr(value))
        raise ConfigError(f"{one_line(where)} must be {s.form} (got {shown})") from None


# ---------------------------------------------------------------- what the table cannot say alone

def _register_secrets(values: Mapping[str, Any], environ: Mapping[str, str]) -> None:
    register_secret(*(values.get(name) for name in SECRET_SETTINGS), *(environ.get(v) for v in SECRET_ENV_VARS))
    for url in ("base_url", "otel_endpoint"):
        if values.get(url):
            redact_url(values[url])            # registers a password in the URL as a secret


def _model(values: Mapping[str, Any], where: Mapping[str, str]) -> str:
    """The model: the default one with a key, else the demo; a real model needs a key."""
    model: str | None = values.get("model")
    if model is None:
        return DEFAULT_MODEL if values.get("api_key") else DEMO_MODEL
    if model.lower() == DEMO_MODEL:
        return DEMO_MODEL
    if values.get("api_key"):
        return model
    if where["model"] == "/model":
        raise ConfigError(f"/model {model} needs an API key, but ANTHROPIC_API_KEY is not set. Set it "
                          f"(environment, or the user config file) and start ctxtui again, or stay offline "
                          f"with /model demo.")
    raise ConfigError(f"{where['model']} is {model!r}, which needs an API key, but ANTHROPIC_API_KEY "
                      f"is not set. Set it (environment, or the user config file), or use --model demo "
                      f"to stay offline.")


def _threshold_for_model(chosen: _Chosen, src: _Sources) -> None:
    """The threshold /threshold kept for this model is more specific than the user file's own
    (a flag or a variable still wins)."""
    by_model = src.user.get(PCT_BY_MODEL) or {}
    model = chosen.values["model"]
    if chosen.sources.get("autocompact_pct") in (None, "user file") and model in by_model:
        at = f"{PCT_BY_MODEL}.{model} (in {src.user_path})"
        chosen.values["autocompact_pct"] = _parse(BY_NAME["autocompact_pct"], by_model[model], at)
        chosen.sources["autocompact_pct"], chosen.where["autocompact_pct"] = "user file, this model", at


def _home(chosen: _Chosen, environ: Mapping[str, str]) -> Path:
    home: Path | None = chosen.values.get("home")
    if home is None:
        return state_root(environ)
    home = home.absolute()
    if home.exists() and not home.is_dir():
        raise ConfigError(f"{chosen.where['home']} must be {BY_NAME['home'].form} (got {str(home)!r}, which is a file)")
    return home


def _workspace(given: Any) -> Path:
    ws = Path(given).expanduser() if given else Path.cwd()
    if not ws.is_dir():
        raise ConfigError(f"--workspace must be an existing folder (got {str(given or ws)!r})")
    return ws.resolve()


def _as_mapping(cli: Mapping[str, Any] | argparse.Namespace | None) -> Mapping[str, Any]:
    return vars(cli) if isinstance(cli, argparse.Namespace) else (cli or {})


def _config(ws: Path, src: _Sources, chosen: _Chosen) -> Config:
    sources = {s.name: chosen.sources.get(s.name, "default") for s in SETTINGS}
    return Config(workspace=ws, config_file=src.user_path if src.user else None, sources=sources,
                  typed={k: v for k, v in src.typed.items() if sources.get(k) == "flag"}, trusted=src.trusted,
                  ignored=tuple(chosen.ignored), dotenv_path=src.dotenv_path if src.dotenv else None,
                  mcp_servers=dict(src.user.get("mcp_servers") or {}), **chosen.values)


def load_config(cli: Mapping[str, Any] | argparse.Namespace | None = None, environ: Mapping[str, str] | None = None,
                workspace: Path | None = None, typed: Mapping[str, str] | None = None) -> Config:
    """Build the Config; raises ConfigError with a message the user can act on. The secrets it
    finds are registered with the scrubber, so nothing written afterwards can hold them. `typed`:
    the CLI values the user gave in the TUI instead, by the command ({"model": "/model"}), so an
    error names what they typed, not a flag they never used."""
    environ = with_held(os.environ) if environ is None else environ
    register_secret(*(environ.get(v) for v in SECRET_ENV_VARS))   # before any message can quote one
    raw_cli = _as_mapping(cli)
    ws = _workspace(workspace if workspace is not None else raw_cli.get("workspace"))
    src = _read_sources(raw_cli, environ, ws, typed or {})
    chosen = _Chosen()
    for s in SETTINGS:
        if (found := src.find(s)) is not None:
            chosen.take(s, found)
    _register_secrets(chosen.values, environ)
    chosen.values["model"] = _model(chosen.values, chosen.where)
    _threshold_for_model(chosen, src)
    chosen.values["home"] = _home(chosen, environ)
    return _config(ws, src, chosen)
