"""`/threshold`: move the auto-compact threshold within a session, and keep it per model."""
from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

from compaction.accounting.budget import ContextBudget

from agent_core import threshold_store
from agent_core.context_budget import MIN_TURN_TOKENS


def moved(old: ContextBudget, pct: float | None, *, engine: str, head_tokens: int) -> ContextBudget:
    """The budget with auto-compact at `pct` of the effective window (None: the default). Raises
    ValueError, saying the bounds, outside them: above the blocking limit less a margin, or so low
    that the system prompt, the tools and a turn no longer fit under it."""
    if engine != "local":
        raise ValueError(f"the {engine} engine's compaction trigger is sent to the API from the session's "
                         f"start: start the session again with --autocompact-pct to move it")
    if not old.autocompact_enabled:
        raise ValueError("auto-compact is off in this session (--disable-autocompact or the policy): "
                         "there is no threshold to move")
    new = replace(old, autocompact_pct=pct)       # raises above the highest safe threshold
    lowest = head_tokens + MIN_TURN_TOKENS
    if new.autocompact_threshold < lowest:
        raise ValueError(f"{pct:g}% puts the auto-compact threshold at {new.autocompact_threshold:,} tokens, under "
                         f"what the system prompt and tools take plus a minimal turn ({lowest:,}); with this "
                         f"window it must be at least {math.ceil(1000 * lowest / new.effective_window) / 10:g}%")
    return new


def kept(path: Path | None, model: str, pct: float | None) -> str:
    """Keep `pct` for `model` in the user config file, so the next session on this model starts
    with it; where it went, or why it could not be."""
    if path is None:
        return "for this session only (no user config file)"
    try:
        threshold_store.save(path, model, pct)
    except (OSError, ValueError) as e:
        return f"for this session only: could not save it in {path} ({e})"
    return f"forgotten for {model} in {path}" if pct is None else f"kept for {model} in {path}"
