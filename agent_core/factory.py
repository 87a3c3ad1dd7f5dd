"""Builds a ready-to-run Agent from a Config: model client, tools, permissions, pipeline, session.

Resume (`--resume ID` / `--continue`) rebuilds everything from the session log: the working
history, the pipeline's state (frozen replacements, collapse store, notes, breakers), cost
totals and "always" permissions.
"""
from __future__ import annotations

from pathlib import Path

from compaction import ContextBudget, Pipeline, PipelineConfig, PipelineState, default_stages

from . import events as ev
from .agent import Agent, Ask, TurnLimits
from .config import Config, ConfigError
from .cost import DEMO_PRICED_AS, CostTracker
from .model import ModelClient
from .paths import is_session_id, session_dir, tool_results_dir
from .permissions import PermissionPolicy
from .session_log import SessionLog, latest_session
from .summarizer_adapter import ModelSummarizer
from .system_prompt import system_prompt
from .tools import ToolContext, ToolRegistry, resolve_path


def make_client(config: Config, demo_chunk_delay: float = 0.0) -> ModelClient:
    if config.is_demo:
        from .demo_model import DemoModel

        return DemoModel(config.workspace, context_window=config.resolved_context_window(),
                         max_output_tokens=min(config.max_output_tokens, 4_000),
                         chunk_delay=demo_chunk_delay)
    from .anthropic_client import AnthropicClient

    explicit_out = config.sources.get("max_output_tokens") not in (None, "default")
    return AnthropicClient(api_key=config.api_key or "", base_url=config.base_url, model=config.model,
                           max_output_tokens=config.max_output_tokens if explicit_out else None,
                           context_window=config.context_window)


def _file_reader(workspace: Path):
    def read(path: str) -> str | None:
        try:
            p = resolve_path(workspace, path)
            return p.read_text(encoding="utf-8", errors="replace") if p.is_file() else None
        except Exception:
            return None
    return read


def build_agent(config: Config, ask: Ask | None = None, *, resume: str | None = None, continue_: bool = False,
                client: ModelClient | None = None, demo_chunk_delay: float = 0.0) -> Agent:
    """Raises ConfigError (exit 2 at the CLI) for an unknown session or an unusable setting."""
    home = Path(config.home)
    loaded = None
    if resume or continue_:
        if resume:
            if not is_session_id(resume):
                raise ConfigError(f"--resume: {resume!r} is not a session id (see .ctxtui/sessions/ in {home})")
            sid = resume
        else:
            info = latest_session(home)
            if info is None:
                raise ConfigError(f"--continue: there is no session under {home / '.ctxtui' / 'sessions'} yet")
            sid = info.session_id
        try:
            log = SessionLog.open(home, sid, secrets=config.secret_values())
        except FileNotFoundError as e:
            raise ConfigError(f"--resume: {e}") from None
        loaded = log.loaded
    else:
        log = SessionLog.create(home, {"model": config.model, "workspace": str(config.workspace),
                                       "config": config.public_dict()}, secrets=config.secret_values())

    client = client or make_client(config, demo_chunk_delay)
    # The thresholds follow the window and max output the client really uses.
    budget = ContextBudget(context_window=client.info.context_window, max_output_tokens=client.info.max_output_tokens,
                           autocompact_enabled=not config.disable_autocompact, autocompact_pct=config.autocompact_pct)
    state = loaded.state if loaded else {}
    pipeline = Pipeline(PipelineConfig(budget=budget, collapse_enabled=not config.disable_collapse), session_dir=session_dir(home, log.session_id),
                        state=PipelineState.from_dict(state.get("pipeline")))
    # The demo has no price of its own: it borrows a real model's so the cost pane shows dollars.
    price_as = {"demo": DEMO_PRICED_AS} if client.info.offline else None
    cost = CostTracker.from_dict(state.get("cost"), price_as=price_as) if state.get("cost") \
        else CostTracker(price_as=price_as)
    if client.info.offline:
        client.info.notes.append(f"costs priced as {DEMO_PRICED_AS} for illustration")
    registry = ToolRegistry()
    pipeline.stages = default_stages(ModelSummarizer(client, cost, tools=registry.definitions()),
                                     read_file=_file_reader(config.workspace))

    permissions = PermissionPolicy.headless(allow=config.allow) if ask is None else PermissionPolicy()
    if ask is not None and config.allow:
        permissions = PermissionPolicy(overrides={t: "allow" for t in config.allow})
    if state.get("permissions"):
        permissions.restore(state["permissions"])
    tool_ctx = ToolContext(config.workspace, bash_timeout=config.bash_timeout,
                           spill_dir=tool_results_dir(home, log.session_id))

    compactions = []
    if loaded:
        for e in loaded.events:
            if e.get("type") == "compaction":
                fields = {k: e[k] for k in ("layer", "trigger", "tokens_before", "tokens_after", "duration_s",
                                            "transcript_path", "action", "timestamp") if k in e}
                compactions.append(ev.Compaction(**fields))
    agent = Agent(client=client, pipeline=pipeline, tools=registry, tool_ctx=tool_ctx, permissions=permissions,
                  cost=cost, system_prompt=system_prompt(config.workspace), session=log, ask=ask,
                  limits=TurnLimits(config.max_turns, config.max_budget_usd),
                  entries=loaded.entries if loaded else None, compactions=compactions, session_id=log.session_id)
    if loaded:
        agent.turns = int(state.get("turns", 0))
    return agent
