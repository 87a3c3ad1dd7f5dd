"""The window and max output a trajectory is replayed at, by the project's one window rule.

`--window` wins. A ctxtui log says what its session ran with (its meta config: the window, the
1M setting, the max output), so it is replayed at that. A Claude Code log says nothing, so the
rule for logs applies (providers/models_info.window_from_log): a `[1m]` model id or a logged
context above 200,000 means the 1M context, else the model's own window — 200,000 for Opus 4.6,
whose 1M context is opt-in.
"""
from __future__ import annotations

from agent_core.context_budget import BudgetSettings, limits_for
from agent_core.logs.trajectory import Trajectory
from agent_core.logs.trajectory_sizes import input_total
from agent_core.providers.models_info import ModelLimits, window_from_log


def largest_context(traj: Trajectory) -> int:
    """The most input any recorded main request held."""
    return max((input_total(r.usage) for r in traj.requests), default=0)


def replay_limits(traj: Trajectory, window: int | None = None) -> ModelLimits:
    """The window (and max output) `traj` is replayed at (module doc); `window`: `--window`."""
    if traj.source == "ctxtui" and traj.logged_config is not None:
        settings = BudgetSettings.from_logged(traj.logged_config, context_window=window)
    else:
        settings = BudgetSettings(context_window=window,
                                  long_context=window_from_log(traj.model, largest_context(traj)))
    return limits_for(traj.model, settings)
