"""`ctxtui` with no subcommand: load the config, build the agent, run the Textual app.

The agent is built interactive: its permission requests come to the app with the other events,
and the app answers each on the request itself (the modal). Built otherwise it would get the
headless policy, which never asks.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Callable, Mapping

from textual.theme import BUILTIN_THEMES

from agent_core.config import Config, ConfigError, load_config
from agent_core.logs.discover import claude_projects_root
from agent_core.providers.demo.model import DemoModel
from agent_core.loop.agent import Agent
from agent_core.loop.factory import build_agent
from agent_core.sessions.paths import sessions_dir
from agent_core.sessions.session_log import SessionWriteError
from agent_core.security.trust import remember as remember_trust
from agent_core.security.visible_text import visible

from app.tui.screens.trust import TrustApp
from app.tui.app import CtxApp
from app.tui.terminal_close import survive_terminal_close


# The demo streams like a real model in the TUI (seconds to the first words, then a few words at a
# time), so a turn and its compactions can be watched; headless and tests keep it instant.
DEMO_LATENCY_S = 0.8
DEMO_CHUNK_DELAY_S = 0.04


def pace(agent: Agent) -> Agent:
    """Give an agent on the demo model a real model's pace (see DEMO_LATENCY_S)."""
    if isinstance(agent.client, DemoModel):
        agent.client.pace(DEMO_CHUNK_DELAY_S, DEMO_LATENCY_S)
    return agent


def demo_banner(config: Config) -> str:
    """The demo's banner in the words of how it was chosen: no key, `--model demo`, or a setting."""
    head = "Demo model, offline: nothing leaves this machine"
    source = config.sources.get("model")
    if source in (None, "default"):
        return f"{head} (no ANTHROPIC_API_KEY is set). To use Claude, set ANTHROPIC_API_KEY and start ctxtui again."
    how = {"flag": "--model demo", "env": "CTXTUI_MODEL=demo", ".env": "CTXTUI_MODEL=demo in .env",
           "user file": "model = demo in the user config file"}.get(source, "model demo")
    key = "" if config.api_key else ", with ANTHROPIC_API_KEY set"
    return f"{head} (started with {how}). To use Claude, start without {how}{key}, or type /model NAME."


def build_app(cli: Mapping[str, Any] | argparse.Namespace | None = None, *, environ: Mapping[str, str] | None = None,
              workspace: Path | None = None, resume: str | None = None, continue_: bool = False,
              claude_root: Path | None | str = "default", client: Any = None, paced: bool = False,
              settle_heap: bool = False, **app_kwargs: Any) -> CtxApp:
    """Config → agent → app. Raises ConfigError. `client` replaces the model client (tests);
    `claude_root` defaults to Claude Code's projects folder when it exists (`claude_projects_root`);
    `paced`: the demo streams like a real model (the `ctxtui` command; tests stay instant);
    `settle_heap`: the collector is settled after the first frame (app/tui/heap.py; the command)."""
    cli_dict = dict(vars(cli) if isinstance(cli, argparse.Namespace) else (cli or {}))
    config: Config = load_config(cli_dict, environ=environ, workspace=workspace)
    theme = app_kwargs.pop("theme", None) or config.theme
    check_theme(theme)
    agent = build_agent(config, interactive=True, resume=resume, continue_=continue_, client=client)
    if paced:
        pace(agent)

    def factory(**overrides: str) -> Agent:
        """A new agent for /model NAME (new session) or /resume ID, from the same CLI settings."""
        over = dict(cli_dict)
        if "model" in overrides:
            over["model"] = overrides["model"]
        cfg = load_config(over, environ=environ, workspace=config.workspace,
                          typed={"model": "/model"} if "model" in overrides else None)
        made = build_agent(cfg, interactive=True, resume=overrides.get("resume"))
        return pace(made) if paced else made

    if claude_root == "default":
        root = claude_projects_root(environ)
    else:
        root = Path(claude_root) if isinstance(claude_root, str) else claude_root
    app = CtxApp(agent, sessions_root=sessions_dir(config.state_dir), claude_root=root,
                 agent_factory=factory, theme=theme,
                 notices=(config.ignored_message() or "", agent.engine_notice or "",   # said once, at start
                          agent.policy_notice or "", *agent.start_notices),
                 banner=demo_banner(config) if config.is_demo else None,
                 keymap=app_kwargs.pop("keymap", None) or dict(config.keymap or {}), settle_heap=settle_heap,
                 files=(agent.tool_ctx.workspace, agent.tool_ctx.protected),   # what the @-mention picker lists
                 long_context=config.long_context, **app_kwargs)
    return app


def check_theme(name: str | None) -> None:
    """Raise ConfigError unless `name` is one of Textual's built-in themes (or not given)."""
    if not name:
        return
    if name not in BUILTIN_THEMES:
        raise ConfigError(f"--theme (or CTXTUI_THEME) must be one of: {', '.join(sorted(BUILTIN_THEMES))} "
                          f"(got {name!r})")


def settle_trust(cli: Mapping[str, Any] | argparse.Namespace | None, *, environ: Mapping[str, str] | None = None,
                 workspace: Path | None = None, ask: Callable[[Config], str | None] | None = None) -> str:
    """Before the agent is built: when the workspace's `.env` sets what only a trusted folder may
    set, `--trust` remembers the folder, else the user is asked (`ask`, the trust screen by
    default). Returns "trusted", "ignore", "quit" or "" (nothing to decide). Raises ConfigError."""
    config = load_config(cli, environ=environ, workspace=workspace)
    wants_trust = bool((vars(cli) if isinstance(cli, argparse.Namespace) else dict(cli or {})).get("trust"))
    if not wants_trust and not config.ignored:
        return ""
    answer = "trust" if wants_trust else (ask or ask_trust)(config) or "ignore"
    if answer == "trust":
        try:
            remember_trust(config.workspace, environ)
        except OSError as e:
            raise ConfigError(f"cannot remember the trusted folder ({e.filename or ''}: {e.strerror or e}); "
                              f"check that your config folder is writable") from None
        return "trusted"
    return answer


def ask_trust(config: Config) -> str | None:
    return TrustApp(config.workspace, config.dotenv_path or config.workspace / ".env", config.ignored).run()


def run_tui(args: argparse.Namespace) -> int:
    """Open the TUI. Exit codes: 0 done, 1 the session log could not be written (disk full), 2 bad
    configuration (a session in use by another ctxtui included), 143/129 stopped by SIGTERM/SIGHUP
    (the running turn cancelled, the session closed valid)."""
    try:
        if settle_trust(args) == "quit":
            return 0
        app = build_app(args, resume=args.resume, continue_=bool(args.continue_),
                        paced=True, settle_heap=True, lazy_side=True)
    except ConfigError as e:
        print(f"ctxtui: {visible(str(e))}", file=sys.stderr)     # a folder's name can be in it
        return 2
    except SessionWriteError as e:
        print(f"ctxtui: {visible(str(e))}", file=sys.stderr)     # a folder's name can be in it
        return 1
    survive_terminal_close(app)
    result = app.run()
    return int(result or 0)
