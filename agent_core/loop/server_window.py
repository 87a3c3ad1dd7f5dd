"""A server whose context window is smaller than the one ctxtui works with.

A proxy, a gateway or a deployment can serve a model with a smaller window than its name says, or
the user's `--context-window` can be too large. The API's refusal then names its maximum:
"prompt is too long: 25158 tokens > 20000 maximum", or "input length and `max_tokens` exceed
context limit: 17817 + 64000 > 20000". From that answer on, the session works within that window:
the thresholds (so the compaction after the refusal sizes what it keeps for it), the server
engine's triggers and read_file's cap follow it, and the pipeline state remembers it, so a resumed
session starts there instead of being refused again. Nothing here calls the model.

The compaction after "prompt too long" also uses the other number the refusal gives: the server
counted N tokens where the estimate said fewer, so it aims low by that ratio (`fit_budget`).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from compaction import ContextBudget, Pipeline
from compaction.accounting.budget import MIN_WINDOW
from compaction.layers.tool_result_budget import per_result_chars

from agent_core.providers.server_context import ServerPlan
from agent_core.tools.base import ToolContext

STATE_KEY = "server_window"
MAX_RATIO = 2.0        # an estimate is never trusted to be off by more than this


def smaller_budget(budget: ContextBudget, window: int) -> ContextBudget | None:
    """`budget` for `window` (every other setting kept), or None when the window is not smaller or
    cannot hold the configured buffers."""
    if not isinstance(window, int) or window >= budget.context_window or window < MIN_WINDOW:
        return None
    try:
        return replace(budget, context_window=window)
    except ValueError:
        return None


def scaled_plan(plan: ServerPlan, old: ContextBudget, new: ContextBudget) -> ServerPlan:
    """The server engine's edits for the smaller window: it compacts at the new auto-compact
    threshold and clears at the same share of the window as before."""
    share = new.context_window / old.context_window
    clear = None if plan.clear_trigger is None else min(int(plan.clear_trigger * share), new.autocompact_threshold)
    return replace(plan, compact_trigger=new.autocompact_threshold, clear_trigger=clear,
                   clear_at_least=int(plan.clear_at_least * share))


def adopt(pipeline: Pipeline, client: Any, tool_ctx: ToolContext | None, window: int) -> str | None:
    """Work within the server's `window` from now on; a notice for the user, or None when the
    window is not smaller than the one in use (or unusable)."""
    old = pipeline.budget
    new = smaller_budget(old, window)
    if new is None:
        return None
    pipeline.set_budget(new)
    plan = getattr(client, "server", None)
    if isinstance(plan, ServerPlan):
        client.server = scaled_plan(plan, old, new)
    if tool_ctx is not None:
        tool_ctx.read_max_chars = min(tool_ctx.read_max_chars, per_result_chars(pipeline.config))
    learned = pipeline.recalled(STATE_KEY) or {}
    pipeline.remember(STATE_KEY, {"window": window,
                                  "configured": int(learned.get("configured") or old.context_window),
                                  "model": client.info.model})
    return (f"The API's context window is {window:,} tokens, smaller than the {old.context_window:,} ctxtui was "
            f"using (the model's, or --context-window / CTXTUI_CONTEXT_WINDOW); the rest of this session works "
            f"within {window:,}.")


def restore(pipeline: Pipeline, client: Any, tool_ctx: ToolContext | None) -> str | None:
    """On resume: the smaller window an earlier run learned, when the model and the configured
    window are still the ones it was learned with (a new setting starts afresh)."""
    state = pipeline.recalled(STATE_KEY)
    if state is None:
        return None
    window, configured = state.get("window"), state.get("configured")
    if state.get("model") != client.info.model or configured != pipeline.budget.context_window:
        pipeline.forget(STATE_KEY)
        return None
    return adopt(pipeline, client, tool_ctx, window) if isinstance(window, int) else None


def count_ratio(server_tokens: int, estimate: int) -> float:
    """How much more the server counted than the estimate of the same request (1 when it counted
    less, at most MAX_RATIO)."""
    if estimate <= 0 or server_tokens <= estimate:
        return 1.0
    return min(MAX_RATIO, server_tokens / estimate)


def fit_budget(budget: ContextBudget, ratio: float) -> ContextBudget:
    """The budget the compaction after a refusal works with: the window shrunk by how much the
    estimate undercounted, so that what it keeps fits once the server counts it."""
    if ratio <= 1.0:
        return budget
    return smaller_budget(budget, max(MIN_WINDOW, int(budget.context_window / ratio))) or budget
