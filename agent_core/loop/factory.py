"""Builds a ready-to-run Agent from a Config: model client, tools, permissions, pipeline, session.

Resume (`--resume ID` / `--continue`) rebuilds everything from the session log: the working
history, the pipeline's state (frozen replacements, collapse store, notes), cost totals and
"always" permissions. The breakers start reset (a trip stays in the log as an event).
"""
from __future__ import annotations

import math
import os
import sys
from typing import TypeGuard
from dataclasses import replace
from pathlib import Path

from compaction import ContextBudget, Pipeline, PipelineConfig, PipelineState, default_stages
from compaction.presets import DEFAULT_PRESET, preset, summarize_config
from compaction.summarizing import SummarizeConfig
from compaction.transcript import transcripts_dir
from compaction.accounting.budget import MIN_WINDOW
from compaction.estimate import estimate_tools
from compaction.accounting.tokens import estimate_text
from compaction.layers.tool_result_budget import per_result_chars

from agent_core import events as ev
from agent_core.loop.agent import Agent, TurnLimits
from agent_core.engine_config import pipeline_config
from agent_core.config import Config, ConfigError, user_config_path
from agent_core.context_budget import MIN_TURN_TOKENS, limits_for, make_budget
from agent_core.pricing.cost import DEMO_PRICED_AS
from agent_core.pricing import rates_cache
from agent_core.pricing.tally import CostTally, loop_pricer
from agent_core.providers.anthropic_client import AnthropicClient
from agent_core.providers.demo.model import DemoModel
from agent_core.providers.demo.pause import catch_up, let_time_pass
from agent_core.providers.demo.server_compaction import ServerDemo
from agent_core.providers.model import ModelClient
from agent_core.providers.server_context import COMPACT_TRIGGER_MIN, ServerPlan, compaction_refusal, plan_for
from agent_core.sessions.paths import (UnsafeDir, ensure_state_dir, file_history_dir, is_session_id, session_dir,
                                      sessions_dir, tool_results_dir)
from agent_core.tools.file_history import FileHistory
from agent_core.tools.permissions import PermissionPolicy
from agent_core.os_sandbox.sandbox import OsSandbox
from agent_core.logs.discover import latest_session
from agent_core.sessions.session_log import SessionLog
from agent_core.sessions.loaded_session import LoadedSession
from agent_core.loop.server_engine import ServerEnginePipeline
from agent_core.loop.summarizer_adapter import ModelSummarizer
from agent_core.loop.system_prompt import system_prompt
from agent_core.loop.memory_files import load_memory
from agent_core.mcp.servers_config import McpConfigError, Servers, ServerSpec
from agent_core.mcp.servers_config import collect as collect_servers
from agent_core.tools import ToolContext, ToolRegistry, resolve_path
from agent_core.tools.files import open_regular
from agent_core.loop import server_window
from agent_core.security.trust import user_config_dir
from agent_core.telemetry.settings import telemetry_settings




def make_client(config: Config) -> ModelClient:
    if config.is_demo:
        limits = limits_for(config.model, config.budget_settings())
        demo = DemoModel(config.workspace, context_window=limits.context_window,
                         max_output_tokens=limits.max_output_tokens, cache_ttl=config.cache_ttl)
        return demo if config.engine == "local" else ServerDemo(demo)   # emulates the server's compaction
    # The client imports the SDK when it is first used (anthropic_client.load_sdk), not here.
    explicit_out = config.sources.get("max_output_tokens") not in (None, "default")
    return AnthropicClient(api_key=config.api_key or "", base_url=config.base_url, model=config.model,
                           max_output_tokens=config.max_output_tokens if explicit_out else None,
                           context_window=config.context_window, connect_timeout=config.api_connect_timeout,
                           idle_timeout=config.api_idle_timeout, cache_ttl=config.cache_ttl,
                           long_context=config.long_context, model_from=config.typed.get("model"))


REINJECT_READ_CAP = 1 << 20    # re-injection keeps a few thousand tokens of a file: never read more


def _file_reader(ctx: ToolContext):
    """What re-injection after a compaction reads a recently read file with: the same confinement
    as the tools (workspace only, never ctxtui's state, regular files only), bounded."""
    def read(path: str) -> str | None:
        try:
            with open_regular(resolve_path(ctx.workspace, path, ctx.protected), path) as f:
                return f.read(REINJECT_READ_CAP).decode("utf-8", errors="replace")
        except Exception:
            return None
    return read


def protected_dirs(config: Config, state: Path) -> tuple[Path, ...]:
    """ctxtui's own folders the tools may not reach: this workspace's state, and the state root
    and user config folder unless the workspace lies inside them (then only the part that is
    ctxtui's own is fenced off, or every path would be refused)."""
    ws = config.workspace.resolve()
    out = [state]
    for folder in (Path(config.home), user_config_dir()):
        real = folder.resolve()
        if ws != real and real not in ws.parents:
            out.append(real)
    return tuple(out)


def minimum_window(overhead: int, budget: ContextBudget) -> int:
    """The smallest window (a multiple of 1,000) whose auto-compact threshold leaves a minimal
    turn of room above the system prompt and tool definitions."""
    window = max(MIN_WINDOW, 1_000)
    while True:
        b = replace(budget, context_window=window, autocompact_pct=None)
        if b.autocompact_threshold >= overhead + MIN_TURN_TOKENS:
            return window
        window += 1_000


def _pct_setting(config: Config) -> str:
    """What the user calls the auto-compact percentage they set, by where it came from."""
    return {"flag": "--autocompact-pct", "user file": "autocompact_pct (in the user config file)",
            "user file, this model": f"autocompact_pct for {config.model} (in the user config file)"}.get(
        config.sources.get("autocompact_pct") or "", "CTXTUI_AUTOCOMPACT_PCT")


def check_room(config: Config, budget: ContextBudget, prompt: str, tools: list[dict]) -> None:
    """Refuse at start-up a window that cannot hold the system prompt, the tool definitions and a
    minimal turn: every run would otherwise end blocked before the model is called."""
    overhead = estimate_text(prompt) + estimate_tools(tools)
    if budget.autocompact_threshold >= overhead + MIN_TURN_TOKENS:
        return
    pct = budget.autocompact_pct
    unscaled = replace(budget, autocompact_pct=None)
    if pct is not None and unscaled.autocompact_threshold >= overhead + MIN_TURN_TOKENS:
        lowest = math.ceil(100 * (overhead + MIN_TURN_TOKENS) / budget.effective_window)
        name = _pct_setting(config)
        raise ConfigError(f"{name} is {pct:g}%, which puts the auto-compact threshold at "
                          f"{budget.autocompact_threshold:,} tokens of a {budget.context_window:,} window: below what "
                          f"the system prompt and tool definitions take (about {overhead:,}) plus a minimal turn "
                          f"({MIN_TURN_TOKENS:,}). The lowest usable percentage with this window is {lowest}%.")
    source = config.sources.get("context_window")
    name = {"flag": "--context-window", "env": "CTXTUI_CONTEXT_WINDOW", ".env": "CTXTUI_CONTEXT_WINDOW (in .env)",
            "user file": "context_window (in the user config file)"}.get(source or "", "the model's context window")
    raise ConfigError(f"{name} is {budget.context_window:,} tokens, too small to work in: the system prompt and tool "
                      f"definitions take about {overhead:,} tokens and a turn needs about {MIN_TURN_TOKENS:,} more "
                      f"below the auto-compact threshold. The smallest usable window is "
                      f"{minimum_window(overhead, budget):,}.")


def prepare_state_dir(config: Config) -> Path:
    """This workspace's state folder, created 0700 and checked (real folders of ours all the way
    down from the state root). A folder that cannot be made or is unsafe is a ConfigError."""
    where = "CTXTUI_HOME" if config.sources.get("home") in ("env", ".env") else \
        "--home" if config.sources.get("home") == "flag" else "the state folder"
    try:
        return ensure_state_dir(Path(config.home), config.state_dir)
    except UnsafeDir as e:
        raise ConfigError(f"{where}: {e}") from None
    except OSError as e:
        raise ConfigError(f"{where}: cannot create {e.filename or config.state_dir}: {e.strerror or e}. "
                          f"Make it writable, or point CTXTUI_HOME (or --home) at a folder you can write.") from None


def build_agent(config: Config, *, interactive: bool = False, resume: str | None = None, continue_: bool = False,
                client: ModelClient | None = None) -> Agent:
    """`interactive`: a front-end answers permission requests (the TUI); otherwise tools set to ask
    are denied unless allowed up front (headless). Raises ConfigError (exit 2 at the CLI) for an
    unknown session or an unusable setting."""
    home = prepare_state_dir(config)
    client = client or make_client(config)
    # The thresholds follow the window and max output the client really uses.
    try:
        budget = make_budget(client.info.context_window, client.info.max_output_tokens, config.budget_settings())
    except ValueError as e:         # a threshold set above the highest safe one
        raise ConfigError(f"{_pct_setting(config)}: {e}. Set a lower one, or none for the default.") from None
    registry = ToolRegistry()
    memory = load_memory(config.workspace)
    memory_part = memory.prompt_part()
    prompt = system_prompt(config.workspace) + memory_part
    servers = mcp_servers(config)
    check_room(config, budget, prompt, registry.definitions())

    # The engine the session really runs: the configured one, or local when the API cannot do what
    # server / hybrid would ask of it for this model and window (said once, at start: engine_notice).
    engine, engine_notice = choose_engine(config, client, budget)
    configured, config = config, replace(config, engine=engine) if engine != config.engine else config
    if engine_notice:
        client.info.notes.append(engine_notice)
    log = open_session(configured, home, resume=resume, continue_=continue_,
                       engine={"engine": engine, **({"engine_notice": engine_notice} if engine_notice else {})})
    loaded = log.loaded
    if loaded and engine_notice:
        log.append_event(ev.Notice(engine_notice))    # a resumed log's meta is its first run's
    state = loaded.state if loaded else {}
    known = rates_cache.load_default()
    cost = make_cost(client, state.get("cost"), known)
    book_unsaved_calls(cost, loaded)
    pcfg = pipeline_config(config, budget, cost.price.rates(client.info.model))
    rates_cache.save_new(cost.price.learned(), known)
    use_server_engine(config, client, pcfg, registry.definitions())
    pipeline = (Pipeline if config.engine == "local" else ServerEnginePipeline)(
        pcfg, session_dir=session_dir(home, log.session_id), state=PipelineState.from_dict(state.get("pipeline")))
    if loaded:
        # A resumed session starts with the breakers reset: a trip stays in the log as an event,
        # but a new run (a script's retry included) may compact automatically again.
        pipeline.reset_breakers()
        # A smaller window the API named in an earlier run (server_window.py) is the window again.
        if server_window.restore(pipeline, client, None) is not None:
            client.info.notes.append(f"context window {pipeline.budget.context_window:,} (the API's, "
                                     f"learned earlier in this session)")
    protected = protected_dirs(config, home)
    sandbox = make_sandbox(config, protected)
    tool_ctx = ToolContext(config.workspace, bash_timeout=config.bash_timeout, tool_timeout=config.tool_timeout,
                           spill_dir=tool_results_dir(home, log.session_id),
                           transcript_dir=transcripts_dir(session_dir(home, log.session_id)),
                           history=FileHistory(file_history_dir(home, log.session_id)),
                           protected=protected, read_max_chars=per_result_chars(pipeline.config), os_sandbox=sandbox)
    agent = Agent(client=client, pipeline=pipeline, tools=registry, tool_ctx=tool_ctx,
                  permissions=make_permissions(config, interactive, state.get("permissions"), sandbox),
                  cost=cost, system_prompt=prompt, session=log, interactive=interactive,
                  limits=TurnLimits(config.max_turns, config.max_budget_usd),
                  entries=loaded.entries if loaded else None, compactions=logged_compactions(loaded),
                  mcp=make_hub(servers.specs, config, session_dir(home, log.session_id), sandbox))
    agent.memory, agent.memory_tokens = memory, estimate_text(memory_part) if memory_part else 0
    # What the memory files and the MCP definitions gave cause to say: once, at start (the front-ends).
    agent.start_notices = [*memory.notices, *servers.notices, *sandbox_notices(sandbox)]
    tool_ctx.status = agent.context_status     # what context_status reports: the pane's own figures
    # where /threshold keeps the threshold per model: the user config file, read at start
    agent.threshold_file = config.config_file or user_config_path(os.environ)
    # Which engine runs and, when it is not the one asked for, why (the front-ends say it at start).
    agent.engine, agent.engine_notice = engine, engine_notice
    # A policy other than the default is said once at start, so a comparison run cannot be mistaken.
    agent.policy_notice = (None if config.policy == DEFAULT_PRESET
                           else f"compaction policy {config.policy}: {preset(config.policy).about}")
    # The summary call is sent with the main call's system prompt and tools: it shares its prefix.
    summarizer = ModelSummarizer(client, agent.record_call, tools=registry.definitions(), system=prompt,
                                 emit=agent.live, count=agent.count_request)
    agent.on_tools_changed.append(lambda defs: setattr(summarizer, "tools", list(defs)))   # MCP tools, once started
    pipeline.use_stages(default_stages(summarizer, summarize_config(SummarizeConfig(), config.policy),
                                       read_file=_file_reader(tool_ctx)))
    if client.info.offline:     # /wait moves the demo's clock; a real model's time passes by itself
        agent.time_travel = lambda text: let_time_pass(agent, text)
    if loaded:
        if client.info.offline:
            catch_up(agent.entries)      # a /wait of an earlier run still counts
        agent.turns = int(state.get("turns", 0))
        agent.figures.api_before = logged_api_seconds(loaded)
        agent.cache_watch.restore(state.get("last_request"))
        agent.figures.context_history = logged_plot(state.get("context_history"))
        active = state.get("active_s")
        if isinstance(active, (int, float)) and not isinstance(active, bool) and math.isfinite(active):
            agent.figures.active_before = max(0.0, float(active))
    agent.telemetry = make_telemetry(config, agent, interactive)
    return agent


def make_sandbox(config: Config, protected: tuple[Path, ...]) -> OsSandbox:
    """The session's OS sandbox (off unless chosen). When chosen, whether it can run is asked
    now, once, so the first command does not wait for the probe and the notice comes at start."""
    sandbox = OsSandbox(config.sandbox_settings(), config.workspace, protected=protected)
    if sandbox.settings.enabled:
        sandbox.availability()
    return sandbox


def sandbox_notices(sandbox: OsSandbox) -> list[str]:
    """Said once at start: a sandbox the user chose that cannot run (bash then asks every time),
    or a host list without the relay it needs."""
    status = sandbox.status()
    if status.problem:
        return [status.problem]
    if sandbox.confines and sandbox.settings.hosts and not sandbox.availability().socat:
        return ["the OS sandbox's host list needs socat (sudo apt-get install socat); until it is installed "
                "sandboxed commands reach no host"]
    return []


def mcp_servers(config: Config) -> Servers:
    """The MCP servers this session starts: --mcp-config files, the user file's [mcp_servers], and
    the project's .mcp.json when the workspace is trusted. A file the user named that cannot be
    used is a ConfigError; the project's problems are notices."""
    try:
        return collect_servers(flag_files=config.mcp_config, user_table=config.mcp_servers,
                               user_origin=f"[mcp_servers] of {config.config_file or 'the user config file'}",
                               workspace=config.workspace, trusted=config.trusted)
    except McpConfigError as e:
        raise ConfigError(f"--mcp-config: {e}") from None


def make_telemetry(config: Config, agent: Agent, interactive: bool):
    """The session's telemetry sink (docs/telemetry.md); None without a collector: the OpenTelemetry
    SDK, about a tenth of a second to import, stays unloaded."""
    settings = telemetry_settings(config)
    if settings is None:
        return None
    from agent_core.telemetry.sink import start_sink  # noqa: PLC0415  (start-up time: the SDK loads only when used)

    def report(line: str) -> None:      # a warning left at exit: headless's stderr (the TUI has its screen)
        print(line, file=sys.stderr)
    try:
        return start_sink(settings, session_id=agent.session_id, request_model=agent.info.model, price=agent.price,
                          cost_before=agent.cost_event(), notify=agent.live, report=None if interactive else report,
                          cost_now=agent.cost_event, demo=config.is_demo)
    except Exception as e:   # the SDK refused to start (a bad OTEL_* variable): the session goes on without it
        agent.start_notices.append(f"telemetry is off: the OpenTelemetry exporter did not start "
                                   f"({type(e).__name__}); docs/telemetry.md")
        return None


def make_hub(specs: list[ServerSpec], config: Config, folder: Path, sandbox: OsSandbox | None = None):
    """The session's MCP hub (None without servers: the SDK, half a second to import, stays unloaded).
    A server whose definition says `"sandbox": true` starts inside `sandbox`."""
    if not specs:
        return None
    from agent_core.mcp.hub import McpHub  # noqa: PLC0415  (start-up time: the mcp SDK loads only when used)
    return McpHub(specs, log_dir=folder, cwd=config.workspace, start_timeout=config.mcp_timeout, os_sandbox=sandbox)


def compaction_window(budget: ContextBudget) -> int | None:
    """The smallest window (a multiple of 1,000) whose auto-compact threshold, with the same
    settings, reaches the API's minimum compaction trigger; None when none up to 10M does."""
    def reaches(thousands: int) -> bool:
        try:
            return replace(budget, context_window=thousands * 1_000).autocompact_threshold >= COMPACT_TRIGGER_MIN
        except ValueError:
            return False
    lo, hi = 1, 10_000
    if not reaches(hi):
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if reaches(mid) else (mid + 1, hi)
    return lo * 1_000


def choose_engine(config: Config, client: ModelClient, budget: ContextBudget) -> tuple[str, str | None]:
    """The engine a session runs: the configured one, or `local` when CTXTUI_ENGINE=server or hybrid
    cannot be honoured, with the reason for the user. Both engines rest on the API's compaction,
    which is documented for a few models and a trigger of at least 50,000 tokens
    (server_context.compaction_refusal); the API refuses anything else, so the session runs
    ctxtui's own compaction instead of failing on its first request. The offline demo is exempt:
    it sends nothing, and emulates the server's compaction at its own small window to be watched."""
    if config.engine == "local" or client.info.offline or not hasattr(client, "server"):
        return config.engine, None     # (a client without server-side context management: use_server_engine)
    given = client.server
    trigger = given.compact_trigger if isinstance(given, ServerPlan) else budget.autocompact_threshold
    reason = compaction_refusal(client.info.model, trigger, budget.context_window, compaction_window(budget))
    if reason is None:
        return config.engine, None
    if trigger < COMPACT_TRIGGER_MIN and budget.autocompact_pct is not None:
        reason += " (or a higher auto-compact percentage than the one set)"
    how = f"--engine {config.engine}" if config.sources.get("engine") == "flag" else f"CTXTUI_ENGINE={config.engine}"
    if isinstance(given, ServerPlan):
        client.server = None
    return "local", (f"{how} cannot be used: {reason}. This session runs the local engine (ctxtui's own "
                     f"compaction) instead.")


def server_plan(config: Config, pcfg: PipelineConfig, tools: list[dict]) -> ServerPlan | None:
    """The server-side edits each request carries for the configured engine, from our own
    thresholds (agent_core/providers/server_context.py); None for the local engine."""
    return plan_for(config.engine, compact_trigger=pcfg.budget.autocompact_threshold,
                    window=pcfg.budget.context_window, micro_trigger_ratio=pcfg.micro_trigger_ratio,
                    keep_recent=pcfg.micro_keep_recent, clear_at_least_ratio=pcfg.micro_clear_at_least_ratio,
                    tool_names=[str(t.get("name")) for t in tools], compactable=pcfg.compactable_tools,
                    preserved=pcfg.preserved_tools)


def use_server_engine(config: Config, client: ModelClient, pcfg: PipelineConfig, tools: list[dict]) -> None:
    """Hand the client its server plan (unless it was given one already, as a test may); a client
    that cannot carry one is a setting error naming CTXTUI_ENGINE."""
    if config.engine == "local":
        return
    if not hasattr(client, "server"):
        raise ConfigError(f"CTXTUI_ENGINE={config.engine}: the {client.info.provider} model client has no "
                          "server-side context management; use CTXTUI_ENGINE=local (or --engine local).")
    if client.server is None:
        client.server = server_plan(config, pcfg, tools)


def logged_plot(points: object) -> list[tuple[int, int, bool]]:
    """The context plot's points from a state snapshot; malformed points are left out."""
    out = []
    for p in points if isinstance(points, list) else ():
        if isinstance(p, list) and len(p) == 3 and all(isinstance(x, int) for x in p[:2]):
            out.append((p[0], p[1], bool(p[2])))
    return out


def open_session(config: Config, home: Path, *, resume: str | None, continue_: bool,
                 engine: dict | None = None) -> SessionLog:
    """A new session log, or the one `--resume ID` / `--continue` names, replayed (`.loaded`).
    `engine`: the engine the session runs ({"engine": ..., and "engine_notice": why, when it is not
    the configured one}), kept in a new log's meta beside the configuration."""
    if not (resume or continue_):
        return SessionLog.create(home, {"model": config.model, "workspace": str(config.workspace),
                                        "config": config.public_dict(), **(engine or {})},
                                 secrets=config.secret_values(), lazy=True)   # no file until the session has content
    if resume:
        if not is_session_id(resume):
            raise ConfigError(f"--resume: {resume!r} is not a session id (see {sessions_dir(home)})")
        sid = resume
    else:
        info = latest_session(home)
        if info is None:
            raise ConfigError(f"--continue: there is no session for {config.workspace} under "
                              f"{sessions_dir(home)} yet")
        sid = info.session_id
    try:
        return SessionLog.open(home, sid, secrets=config.secret_values())
    except FileNotFoundError as e:
        raise ConfigError(f"--resume: {e}") from None


def make_cost(client: ModelClient, saved: dict | None, known: dict | None = None) -> CostTally:
    """The session's cost book, restored on resume. The demo has no price of its own: it borrows a
    real model's so the cost pane shows dollars. `known`: rates learned by earlier runs, so that
    genai-prices (half a second to load) is loaded only for a model or date not seen before."""
    price_as = {"demo": DEMO_PRICED_AS} if client.info.offline else None
    if client.info.offline:
        client.info.notes.append(f"costs priced as {DEMO_PRICED_AS} for illustration")
    pricer = loop_pricer(price_as, known)
    return (CostTally.from_dict(saved, price_as=price_as, pricer=pricer) if saved
            else CostTally(price_as=price_as, pricer=pricer))


def make_permissions(config: Config, interactive: bool, saved: dict | None,
                     sandbox: OsSandbox | None = None) -> PermissionPolicy:
    """Headless: ask-tools are denied unless `--allow`ed. Interactive: `--allow` turns ask into
    allow and leaves the rest to the user. A resumed session keeps its "always" answers. The
    sandbox decides bash's mode when the user chose it."""
    if not interactive:
        permissions = PermissionPolicy.headless(allow=config.allow)
    elif config.allow:
        permissions = PermissionPolicy(overrides={t: "allow" for t in config.allow})
    else:
        permissions = PermissionPolicy()
    if saved:
        permissions.restore(saved)
    permissions.sandbox = sandbox
    return permissions


def logged_api_seconds(loaded: LoadedSession | None) -> float:
    """The model calls a resumed session's log recorded, their durations added up: the state's
    figure (`api_s`) and the calls logged after it; a log whose state has none, every call's."""
    if loaded is None:
        return 0.0
    saved = loaded.state.get("api_s")
    if _seconds(saved):
        calls, total = loaded.calls_after_state, float(saved)
    else:
        calls, total = [e for e in loaded.events if e.get("type") == "model_call"], 0.0
    return total + sum(float(d) for e in calls if _seconds(d := e.get("duration_s")))


def _seconds(v: object) -> TypeGuard[float]:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0


def book_unsaved_calls(cost: CostTally, loaded: LoadedSession | None) -> None:
    """The model calls a run logged and then was killed before its state counted them (kill -9
    mid-turn): booked now, so the resumed cost is the log's, as `usage` and `watch` count it."""
    for e in loaded.calls_after_state if loaded else ():
        usage = e.get("usage")
        if isinstance(usage, dict):     # priced now: a model_call event carries no time of its own
            cost.add(str(e.get("model") or "unknown"), usage, str(e.get("purpose") or "main"))


def logged_compactions(loaded: LoadedSession | None) -> list[ev.Compaction]:
    """The compactions a resumed session's log recorded, for the timeline."""
    out = []
    for e in loaded.events if loaded else ():
        if e.get("type") == "compaction":
            fields = {k: e[k] for k in ("layer", "trigger", "tokens_before", "tokens_after", "duration_s",
                                        "transcript_path", "action", "timestamp", "cache", "parts", "usage") if k in e}
            out.append(ev.Compaction(**fields))
    return out
