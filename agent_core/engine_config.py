"""The engine's knobs for a configuration, in one builder that the loop (agent_core/loop/factory.py)
and `ctxtui replay` (agent_core/replay/policy_config.py) share, so a replayed setting means what it
means in a session. Its own module, so replay loads the engine's settings without the loop."""
from __future__ import annotations

from compaction import PipelineConfig
from compaction.accounting.budget import ContextBudget
from compaction.accounting.cache_model import Rates
from compaction.presets import apply_preset

from agent_core.config import Config


def pipeline_config(config: Config, budget: ContextBudget, rates: dict[str, float] | None = None) -> PipelineConfig:
    """The engine's knobs for a config: what the loop runs with, and what `ctxtui replay` replays a
    policy variant with (one builder, so a replayed setting means what it means in a session).
    `rates` are the model's dollars per token by bucket (`Pricer.rates`); None (a model without
    price data) keeps the engine's default rates, whose ratios are what its decisions depend on."""
    cfg = apply_preset(PipelineConfig(budget=budget, collapse_enabled=not config.disable_collapse,
                                      cache_ttl=config.cache_ttl), config.policy)
    if config.engine == "server":
        # The API clears and compacts; of ours only the tool-result budget (and the blocking limit) stays.
        cfg.snip_enabled = cfg.microcompact_enabled = cfg.time_based_enabled = cfg.collapse_enabled = False
    if rates is not None:
        cfg.cache_rates = Rates.from_mapping(rates)
        cfg.cache_rates_known = True
    return cfg
