"""One way to get a session's context budget, and one way to report a count against it.

The loop (`loop/factory.py`), the config (`Config.budget`), `watch` (a log's meta config) and
replay all build their `ContextBudget` here, so the thresholds a log viewer shows are the ones
the loop compacted at. `context_update` turns a budget and a token count into the event the
context pane draws, for the loop and for watch alike.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from compaction.accounting.budget import ContextBudget
from compaction.presets import DEFAULT_PRESET, PRESETS, budget_fields

from agent_core.providers.models_info import (DEFAULT_CONTEXT_WINDOW, DEFAULT_MAX_OUTPUT, DEMO_CONTEXT_WINDOW,
                                              DEMO_MAX_OUTPUT, DEMO_MODEL, ModelLimits, model_limits)


MIN_TURN_TOKENS = 1_500   # room under the threshold beside the system prompt and tools: one small turn


@dataclass(frozen=True)
class BudgetSettings:
    """What the user chose about the budget; None means the model's own figure."""
    context_window: int | None = None
    max_output_tokens: int | None = None
    autocompact_enabled: bool = True
    autocompact_pct: float | None = None
    window_source: str = "override"     # what to call a window set here: override | session config
    long_context: bool = False          # the 1M context is on (models_info's window rule)
    policy: str = DEFAULT_PRESET        # the compaction preset, which may set the buffers (the cc presets)

    @classmethod
    def from_logged(cls, config: Mapping[str, Any] | None, *, context_window: int | None = None) -> BudgetSettings:
        """Settings from a session log's meta `config` (values that do not fit are ignored, so a
        damaged log cannot break the thresholds); `context_window` (a viewer's flag) wins."""
        cfg = config or {}

        def positive_int(key: str) -> int | None:
            v = cfg.get(key)
            return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None

        pct = cfg.get("autocompact_pct")
        pct = float(pct) if isinstance(pct, (int, float)) and not isinstance(pct, bool) and 0 < pct <= 100 else None
        logged_window = positive_int("context_window")
        policy = cfg.get("policy")
        return cls(context_window=context_window if context_window is not None else logged_window,
                   max_output_tokens=positive_int("max_output_tokens"),
                   autocompact_enabled=not bool(cfg.get("disable_autocompact")), autocompact_pct=pct,
                   window_source="override" if context_window is not None or logged_window is None
                   else "session config", long_context=cfg.get("long_context") is True,
                   policy=policy if isinstance(policy, str) and policy in PRESETS else DEFAULT_PRESET)


@dataclass(frozen=True)
class BudgetInfo:
    model: str | None
    budget: ContextBudget
    window_source: str        # override | session config | demo | genai-prices | table | default


def limits_for(model: str | None, settings: BudgetSettings = BudgetSettings()) -> ModelLimits:
    """Window and max output for `model` as the loop's client uses them: the settings' figures,
    else the demo's, else genai-prices' and the family table. `None` (no model known yet) gives
    the defaults without loading genai-prices' data."""
    window, out = settings.context_window, settings.max_output_tokens
    wsrc = settings.window_source
    if model == DEMO_MODEL:
        return ModelLimits(model, window or DEMO_CONTEXT_WINDOW, min(out or DEMO_MAX_OUTPUT, DEMO_MAX_OUTPUT),
                           wsrc if window else "demo", "override" if out else "demo")
    if model is None:
        return ModelLimits("unknown", window or DEFAULT_CONTEXT_WINDOW, out or DEFAULT_MAX_OUTPUT,
                           wsrc if window else "default", "override" if out else "default")
    limits = model_limits(model, context_window=window, max_output_tokens=out, long_context=settings.long_context)
    return limits if window is None else ModelLimits(model, limits.context_window, limits.max_output_tokens, wsrc,
                                                     limits.output_source)


def make_budget(context_window: int, max_output_tokens: int,
                settings: BudgetSettings = BudgetSettings()) -> ContextBudget:
    """The thresholds for a window and max output the client really uses, with the policy's buffers."""
    return ContextBudget(context_window=context_window, max_output_tokens=max_output_tokens,
                         autocompact_enabled=settings.autocompact_enabled, autocompact_pct=settings.autocompact_pct,
                         **budget_fields(settings.policy))


def budget_for(model: str | None, settings: BudgetSettings = BudgetSettings()) -> BudgetInfo:
    """The budget the loop uses for `model` with these settings, and where its window came from."""
    limits = limits_for(model, settings)
    return BudgetInfo(model, make_budget(limits.context_window, limits.max_output_tokens, settings),
                      limits.window_source)


# The least room for an answer a call is sent with (Claude Code's floor); less is a prompt-too-long case.
OUTPUT_FLOOR = 3_000


# Share of the estimated input kept free beside max_tokens (estimates are usually within 2-3%): the
# main call and the summary call both leave it, so the API rarely has to refuse input + max_tokens.
ESTIMATE_MARGIN = 0.02


def output_room(window: int, max_output: int, input_tokens: int, floor: int = OUTPUT_FLOOR) -> int | None:
    """`max_tokens` for a call whose input is `input_tokens`: the model's max output, lowered so
    input + max_tokens fits the window (the API refuses a request that does not); None when not
    even `floor` (at most the max output) fits, which is a prompt-too-long case."""
    floor = max(1, min(floor, max_output))
    room = window - input_tokens
    return min(max_output, room) if room >= floor else None


def threshold_pct(text: str, budget: ContextBudget) -> float | None:
    """What `/threshold` was given, as an autocompact_pct of `budget`'s effective window: `70%` or
    `70` (at most 100: a percentage), a token count (`120000`, `120k`), or `default` (None).
    Raises ValueError saying what to type; the bounds are the budget's (`Agent.set_threshold`)."""
    t = text.strip().lower().replace(",", "").replace("_", "")
    if t in ("default", "reset", "off"):
        return None
    scale = 1
    if t.endswith("%"):
        t, scale = t[:-1].strip(), 0
    elif t.endswith("k"):
        t, scale = t[:-1].strip(), 1_000
    try:
        n = float(t)
    except ValueError:
        n = -1.0
    if not n > 0 or n != n or n == float("inf"):
        raise ValueError(f"not a threshold: {text.strip()!r}; give a percentage of the usable window (70%), "
                         f"a token count (120000 or 120k), or `default`")
    if scale == 0 or (scale == 1 and n <= 100):
        return round(n, 1)
    return budget.pct_for(int(n * scale))


def threshold_words(budget: ContextBudget) -> str:
    """Where auto-compact is: "at 140,000 tokens (77.8% of the 180,000 usable; yours, the default is
    167,000)", for a notice."""
    pct = budget.pct_for(budget.autocompact_threshold)
    whose = ("the default" if budget.autocompact_pct is None
             else f"yours, the default is {budget.default_threshold:,}")
    return (f"at {budget.autocompact_threshold:,} tokens ({pct:.1f}% of the {budget.effective_window:,} usable; "
            f"{whose}; at most {budget.highest_threshold:,})")
