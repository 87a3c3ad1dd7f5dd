"""One budget builder: the loop, the config and watch agree on the thresholds."""
from __future__ import annotations

from pathlib import Path

import pytest

from agent_core.config import load_config
from agent_core.context_budget import BudgetSettings, budget_for
from agent_core.events import context_update
from agent_core.loop.factory import build_agent
from compaction.accounting.budget import ContextBudget
from tests.agent_helpers import SECRET, make_workspace, user_dirs


@pytest.mark.parametrize("model, cli", [
    ("demo", {}),
    ("demo", {"context_window": 200_000}),                # the demo caps max output, so the reserve is small
    ("claude-3-5-haiku-latest", {}),                      # max output from the family table, not the default
    ("claude-sonnet-4-6", {"max_output_tokens": 2_000, "autocompact_pct": 60}),
])
async def test_config_and_watch_budget_is_the_loops(tmp_path: Path, model, cli):
    ws = make_workspace(tmp_path)
    environ = {**user_dirs(), "ANTHROPIC_API_KEY": SECRET, "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}
    config = load_config({"model": model, **cli}, environ=environ, workspace=ws)
    agent = build_agent(config)
    try:
        loop_budget = agent.pipeline.config.budget
        assert config.budget() == loop_budget
        if model == "demo" or "max_output_tokens" in cli:    # a log only knows max output when it was set
            logged = config.public_dict()
            assert budget_for(model, BudgetSettings.from_logged(logged)).budget == loop_budget
    finally:
        await agent.aclose()


def test_budget_for_defaults_to_model_limits():
    info = budget_for("acme-unknown")
    assert info.budget.context_window == 200_000 and info.window_source == "default"
    assert budget_for(None, BudgetSettings(context_window=5_000)).budget.context_window == 5_000


def test_logged_settings_and_a_viewers_override():
    logged = {"context_window": 50_000, "disable_autocompact": True, "autocompact_pct": "80", "max_output_tokens": -1}
    s = BudgetSettings.from_logged(logged)
    assert (s.context_window, s.autocompact_enabled, s.autocompact_pct) == (50_000, False, None)
    assert s.max_output_tokens is None
    assert budget_for("claude-sonnet-4-6", s).window_source == "session config"
    over = BudgetSettings.from_logged(logged, context_window=40_000)
    assert budget_for("claude-sonnet-4-6", over).budget.context_window == 40_000
    assert budget_for("claude-sonnet-4-6", over).window_source == "override"
    assert budget_for("demo", BudgetSettings.from_logged(None)).window_source == "demo"


def test_context_update_reports_the_count_against_the_budget():
    b = ContextBudget(context_window=100_000, max_output_tokens=8_000)
    e = context_update(b, 80_000, {"free": 1})
    assert (e.tokens, e.window, e.threshold, e.categories) == (80_000, 100_000, b.autocompact_threshold, {"free": 1})
    assert (e.warning, e.error, e.blocking) == (b.warning_threshold, b.error_threshold, b.blocking_limit)
    assert e.state == b.state(80_000) and e.percent_left == round(b.percent_left(80_000), 1)
