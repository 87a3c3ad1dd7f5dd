"""Every setting, stated once: its config-file key, flag, variable, default, form, help text and
parser. From this table `ctxtui --help` builds its setting flags and its list of variables
(`add_setting_flags`, `format_variables`), `load_config` reads each source (agent_core/config.py),
`Config` takes its defaults, and a test holds docs/configuration.md's table to it. A new setting
is one `Setting` here and one field of `Config`."""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Callable, Literal

from compaction.presets import DEFAULT_PRESET, PRESETS

from agent_core import setting_parsers as p
from agent_core.os_sandbox.settings import parse_mode, parse_network, parse_paths
from agent_core.providers.models_info import DEFAULT_MODEL, DEMO_CONTEXT_WINDOW, DEMO_MODEL
from agent_core.providers.server_context import ENGINES
from agent_core.tool_spec import TOOL_NAMES

MIN_CONTEXT_WINDOW = 1_000
CACHE_TTLS = ("5m", "1h")


@dataclass(frozen=True)
class Flag:
    """How a setting is written on the command line. `kind`: value (`--model NAME`), switch
    (`--disable-collapse`: on when given) or repeat (`--allow` given again adds to the list)."""
    metavar: str | None = None
    kind: Literal["value", "switch", "repeat"] = "value"
    spelling: str | None = None          # default: the key with dashes, `--context-window`


@dataclass(frozen=True)
class Setting:
    name: str                  # the Config field and the user file's key
    env: str | None            # the environment / .env variable
    form: str                  # the form expected, for error messages, --help and the docs
    meaning: str               # the help text
    parse: Callable[[Any], Any]
    default: Any = None
    default_text: str | None = None      # the default in words, when it is not a plain value
    flag: Flag | None = None
    also_env: tuple[str, ...] = ()       # further variables read, after `env`, when it is unset
    secret: bool = False                 # never written, never shown in a message

    @property
    def flag_name(self) -> str | None:
        if self.flag is None:
            return None
        return self.flag.spelling or "--" + self.name.replace("_", "-")

    @property
    def variables(self) -> tuple[str, ...]:
        return tuple(v for v in (self.env, *self.also_env) if v)


_TOOLS_FORM = ("tool names separated by commas, from " + ", ".join(TOOL_NAMES)
               + " (or all), or an MCP server's mcp__SERVER or mcp__SERVER__TOOL")
_SECONDS = "a number of seconds > 0"


def _seconds(name: str, env: str, meaning: str, default: float) -> Setting:
    return Setting(name, env, _SECONDS, meaning, p.positive, default, flag=Flag("SECONDS"))


SETTINGS: tuple[Setting, ...] = (
    Setting("api_key", "ANTHROPIC_API_KEY", "a non-empty API key",
            "Anthropic API key; without one the offline demo model is used", p.text, secret=True),
    Setting("base_url", "ANTHROPIC_BASE_URL", "an http:// or https:// URL",
            "Messages API endpoint (a proxy or a test server)", p.url, default_text="Anthropic's",
            flag=Flag("URL")),
    Setting("model", "CTXTUI_MODEL", "a model id, or demo", "the model to run; demo is the offline demo model",
            p.text, DEMO_MODEL, f"{DEFAULT_MODEL} with an API key, else demo", Flag("NAME")),
    Setting("context_window", "CTXTUI_CONTEXT_WINDOW", f"a whole number >= {MIN_CONTEXT_WINDOW}",
            "the context window in tokens", p.whole_number_at_least(MIN_CONTEXT_WINDOW),
            default_text=f"the model's from genai-prices, demo {DEMO_CONTEXT_WINDOW:,}", flag=Flag("N")),
    Setting("long_context", "CTXTUI_1M_CONTEXT", p.BOOLEAN_FORM,
            "use the 1M-token context of a model where it is opt-in (Opus 4.6, Sonnet 4.6, Sonnet 4.5 and 4): "
            "a 1,000,000-token window, and requests carry the API's 1M beta header", p.boolean, False,
            flag=Flag(kind="switch", spelling="--1m-context")),
    Setting("max_output_tokens", "CTXTUI_MAX_OUTPUT_TOKENS", "a whole number >= 1",
            "max tokens per model reply; also the room reserved for a summary", p.whole_number_at_least(1),
            32_000, flag=Flag("N")),
    Setting("autocompact_pct", "CTXTUI_AUTOCOMPACT_PCT", "a number in (0, 100]",
            "auto-compact at this percent of the effective window, above the default threshold or below it (at "
            "most the blocking limit less a margin); /threshold sets it live and keeps it per model",
            p.percent, default_text="the policy's threshold", flag=Flag("P")),
    Setting("disable_autocompact", "CTXTUI_DISABLE_AUTOCOMPACT", p.BOOLEAN_FORM,
            "turn automatic compaction off (/compact still works)", p.boolean, False, flag=Flag(kind="switch")),
    Setting("disable_collapse", "CTXTUI_DISABLE_COLLAPSE", p.BOOLEAN_FORM,
            "turn context collapse off, so summaries (session memory, auto-compact) take over at the threshold",
            p.boolean, False, flag=Flag(kind="switch")),
    Setting("policy", "CTXTUI_POLICY", "one of " + ", ".join(PRESETS),
            "the compaction policy: " + ", ".join(f"{x.name} ({x.about})" for x in PRESETS.values())
            + "; `ctxtui replay` replays a log under each, to compare", p.one_of(PRESETS), DEFAULT_PRESET,
            flag=Flag("NAME")),
    Setting("cache_ttl", "CTXTUI_CACHE_TTL", " or ".join(CACHE_TTLS),
            "how long the prompt cache keeps the conversation; 1h writes cost 2x input instead of 1.25x, worth "
            "it when you pause longer than 5 minutes between prompts", p.one_of(CACHE_TTLS), CACHE_TTLS[0],
            flag=Flag("|".join(CACHE_TTLS))),
    Setting("engine", "CTXTUI_ENGINE", "local, server or hybrid",
            "who manages the context: local = ctxtui's own layers and summary; server = the API's context "
            "editing and compaction (betas), ctxtui keeping only the tool-result budget and the blocking limit; "
            "hybrid = ctxtui's cheap layers, then the API's compaction instead of a summary call. server and "
            "hybrid need a model the API's compaction supports (Claude Opus 4.7 or 4.6, Sonnet 4.6, Mythos "
            "Preview) and an auto-compact threshold of at least 50,000 tokens (a window of 60,000 or more); "
            "otherwise the session runs local and says why at start", p.one_of(ENGINES), ENGINES[0],
            flag=Flag("MODE")),
    Setting("home", "CTXTUI_HOME", "a folder path",
            "ctxtui's state folder (sessions, transcripts, tool results, one folder per workspace)", p.path,
            default_text="$XDG_STATE_HOME/ctxtui or ~/.local/state/ctxtui", flag=Flag("DIR")),
    Setting("max_turns", "CTXTUI_MAX_TURNS", "a whole number >= 1", "stop a run after this many model calls",
            p.whole_number_at_least(1), default_text="no limit", flag=Flag("N")),
    Setting("max_budget_usd", "CTXTUI_MAX_BUDGET_USD", "a number of dollars > 0",
            "stop when the session cost reaches this", p.positive, default_text="no limit", flag=Flag("X")),
    Setting("allow", "CTXTUI_ALLOW", _TOOLS_FORM,
            "tools allowed without asking (headless denies write/edit/bash unless allowed); --allow may be "
            "repeated", p.tools, (), flag=Flag("TOOL[,TOOL]", "repeat")),
    Setting("mcp_config", "CTXTUI_MCP_CONFIG", "a file path (several: comma-separated)",
            "MCP servers to start, in Claude Code's format ({\"mcpServers\": {NAME: {command, args, env} or "
            "{type: http, url, headers}}}); --mcp-config may be repeated. Their tools are mcp__NAME__TOOL and "
            "ask first: --allow mcp__NAME allows a server's", p.paths, (), flag=Flag("FILE", "repeat")),
    _seconds("mcp_timeout", "CTXTUI_MCP_TIMEOUT", "how long an MCP server may take to start and list its tools",
             30.0),
    _seconds("bash_timeout", "CTXTUI_BASH_TIMEOUT", "the bash tool's default timeout", 120.0),
    _seconds("tool_timeout", "CTXTUI_TOOL_TIMEOUT", "the deadline of every other tool call (read, write, edit, "
             "glob, grep)", 120.0),
    _seconds("api_connect_timeout", "CTXTUI_API_CONNECT_TIMEOUT", "give up connecting to the API after this long",
             10.0),
    _seconds("api_idle_timeout", "CTXTUI_API_IDLE_TIMEOUT", "give up when the API sends nothing for this long, "
             "before or during an answer", 120.0),
    Setting("sandbox", "CTXTUI_SANDBOX", "auto-allow, ask or off",
            "run bash and shell mode in the OS sandbox (bubblewrap; docs/security.md): auto-allow = sandboxed "
            "commands run without asking, ask = they still ask, off = unconfined. Sandboxed, the workspace and a "
            "private /tmp are writable, secret folders hidden, no network unless --sandbox-network; /sandbox sets "
            "it live", parse_mode, "off", flag=Flag("MODE")),
    Setting("sandbox_network", "CTXTUI_SANDBOX_NETWORK", "none, all, or hosts separated by commas",
            "what a sandboxed command may reach: none, all, or only these hosts (example.com, *.example.com) "
            "through a filtering proxy", parse_network, "none", flag=Flag("none|all|HOSTS")),
    Setting("sandbox_hide", "CTXTUI_SANDBOX_HIDE", "absolute paths separated by commas",
            "more paths a sandboxed command cannot see (besides ~/.ssh, ~/.aws, ~/.gnupg, ~/.config/gh, "
            "~/.netrc, ctxtui's state and others)", parse_paths, ()),
    Setting("sandbox_write", "CTXTUI_SANDBOX_WRITE", "absolute paths separated by commas",
            "more folders a sandboxed command may write (a cache, say), besides the workspace and a private /tmp",
            parse_paths, ()),
    Setting("theme", "CTXTUI_THEME", "a Textual theme name", "the TUI's colour theme", p.text,
            default_text="Textual's", flag=Flag("NAME")),
    Setting("otel_endpoint", "CTXTUI_OTEL_ENDPOINT", "an http:// or https:// URL",
            "export usage, cost, compactions and the context figure with OpenTelemetry (OTLP/HTTP) to this "
            "collector; /v1/traces and /v1/metrics are appended (also read from OTEL_EXPORTER_OTLP_ENDPOINT; "
            "docs/telemetry.md)", p.url, default_text="no export", also_env=("OTEL_EXPORTER_OTLP_ENDPOINT",)),
    Setting("otel_headers", "OTEL_EXPORTER_OTLP_HEADERS", "key=value pairs separated by commas",
            "headers sent with each export (e.g. authorization=Bearer%20TOKEN); a secret: never written, "
            "never shown, kept from the tools", p.text, secret=True),
    Setting("otel_service_name", "OTEL_SERVICE_NAME", "a non-empty name",
            "service.name of the exported telemetry", p.text, "ctxtui"),
    Setting("keymap", None, "a table of action = \"key\"", "key bindings to override (user config file only)",
            p.keymap, MappingProxyType({})),
)
BY_NAME = {s.name: s for s in SETTINGS}
SECRET_SETTINGS = tuple(s.name for s in SETTINGS if s.secret)

# (variable, expected form, meaning): every variable ctxtui reads for its settings.
CONFIG_FILE_VARIABLE = ("CTXTUI_CONFIG", "a file path", "the user config file (default "
                        "$XDG_CONFIG_HOME/ctxtui/config.toml, else ~/.config/ctxtui/config.toml)")
VARIABLES: list[tuple[str, str, str]] = [(s.env, s.form, s.meaning) for s in SETTINGS if s.env] + [
    CONFIG_FILE_VARIABLE]


def default(name: str) -> Any:
    """The default of a setting (for `Config`'s fields)."""
    return BY_NAME[name].default


def shown_default(s: Setting) -> str:
    """The default as --help and the docs show it."""
    d = s.default
    if s.default_text is not None:
        return s.default_text
    if d is None or d == () or d == {}:
        return "none"
    if isinstance(d, bool):
        return "on" if d else "off"
    if isinstance(d, int):
        return f"{d:,}"
    if isinstance(d, float):
        return f"{d:g}"
    return str(d)


def flag_help(s: Setting) -> str:
    """A setting flag's --help text: its meaning, its default and its variable (% escaped for argparse)."""
    env = f"; env {s.env}" if s.env else ""
    return f"{s.meaning} (default: {shown_default(s)}{env})".replace("%", "%%")


def add_setting_flags(parser: argparse._ActionsContainer, settings: tuple[Setting, ...] | None = None) -> None:
    """One flag for each of `settings` (default: the table) that has one; its dest is the setting's
    name. Values stay text: `load_config` parses them with the setting's parser, so an error names
    the flag and the form, as it names a variable."""
    for s in SETTINGS if settings is None else settings:
        if s.flag is None or s.flag_name is None:
            continue
        if s.flag.kind == "switch":
            parser.add_argument(s.flag_name, dest=s.name, action="store_true", default=None, help=flag_help(s))
        elif s.flag.kind == "repeat":
            parser.add_argument(s.flag_name, dest=s.name, action="append", default=[], metavar=s.flag.metavar,
                                help=flag_help(s))
        else:
            parser.add_argument(s.flag_name, dest=s.name, metavar=s.flag.metavar, help=flag_help(s))


def format_variables(width: int = 28) -> str:
    """Every variable, one line each, for the `--help` epilog: a setting with a flag points at it
    (its help is there), the others say what they set."""
    lines = []
    for s in SETTINGS:
        if s.env is None:
            continue
        about = f"as {s.flag_name}" if s.flag_name else f"{s.meaning} (default: {shown_default(s)})"
        lines.append(f"  {s.env:<{width}} {about} [{s.form}]")
    name, form, meaning = CONFIG_FILE_VARIABLE
    return "\n".join([*lines, f"  {name:<{width}} {meaning} [{form}]"])
