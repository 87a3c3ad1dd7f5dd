"""The engine configuration a policy replays with, built the way the loop builds it.

A variant's settings go into a `Config` exactly as if they had been set in the environment, then
through the loop's own `make_budget` and `pipeline_config` (agent_core/engine_config.py); only the
window (`--window`, unless the variant sets CTXTUI_CONTEXT_WINDOW), the cache TTL (`--ttl`,
unless it sets the TTL), the head size and the model's rates come from the replay.
"""
from __future__ import annotations

import dataclasses

from compaction import PipelineConfig
from compaction.accounting.cache_model import Rates

from agent_core.config import Config
from agent_core.context_budget import limits_for, make_budget
from agent_core.engine_config import pipeline_config
from agent_core.pricing.pricer import Pricer
from agent_core.replay.options import PolicySpec

_CONFIG_FIELDS = {f.name for f in dataclasses.fields(Config)}


def policy_settings_config(spec: PolicySpec, model: str, window: int | None) -> Config:
    """A Config holding the variant's settings (sourced as if set on the command line)."""
    values = {k: v for k, v in spec.settings.items() if k in _CONFIG_FIELDS}
    values.setdefault("policy", spec.base)
    if window is not None and "context_window" not in values:
        values["context_window"] = window
    return Config(model=model, sources={k: "flag" for k in values}, **values)


def rates_for(model: str, pricer: Pricer) -> Rates | None:
    """Dollars per token per bucket from genai-prices (`Pricer.rates`), or None when the model has
    no price data (the engine then keeps its default rates)."""
    rates = pricer.rates(model)
    return None if rates is None else Rates.from_mapping(rates)


def engine_config(spec: PolicySpec, model: str, window: int | None, ttl: str, overhead: int,
                  pricer: Pricer) -> PipelineConfig:
    """The PipelineConfig the loop would build for this policy, with the replay's head size, TTL
    (unless the variant sets one) and the model's rates."""
    config = policy_settings_config(spec, model, window)
    limits = limits_for(model, config.budget_settings())
    budget = make_budget(limits.context_window, limits.max_output_tokens, config.budget_settings())
    pcfg = pipeline_config(config, budget)
    pcfg.overhead_tokens = overhead
    if "cache_ttl" not in spec.settings:
        pcfg.cache_ttl = ttl
    rates = rates_for(model, pricer)
    if rates is not None:
        pcfg.cache_rates = rates
    return pcfg
