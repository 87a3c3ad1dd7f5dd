"""The thresholds each policy compacts at (issue 49): `cc` and `cc-reactive` use Claude Code
2.1.328's figures at every window (effective window W − min(max output, 20,000); auto-compact 13,000
under it; warning and error 20,000 under that; blocking 3,000 under the effective window), and the
default's scaled thresholds are what they were."""
from __future__ import annotations

from pathlib import Path

import pytest

from agent_core.config import load_config
from agent_core.context_budget import BudgetSettings, budget_for
from compaction.accounting.budget import ContextBudget
from compaction.presets import CLAUDE_CODE
from tests.agent_helpers import SECRET, user_dirs

MODEL = "claude-sonnet-4-6"      # max output 64,000: the reserve is Claude Code's 20,000


def _config(tmp_path: Path, **cli):
    environ = {**user_dirs(), "ANTHROPIC_API_KEY": SECRET, "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}
    return load_config({"model": MODEL, **cli}, environ=environ, workspace=tmp_path)


def _marks(b: ContextBudget) -> tuple[int, ...]:
    return (b.effective_window, b.autocompact_threshold, b.warning_threshold, b.error_threshold, b.blocking_limit)


@pytest.mark.parametrize("policy", ["cc", "cc-reactive"])
@pytest.mark.parametrize("window, marks", [
    (60_000, (54_000, 50_100, 44_100, 47_100, 53_100)),        # under 100k, which Claude Code refuses: the defaults
    (99_999, (90_000, 83_501, 73_502, 78_502, 88_501)),        # (the reserve scales: 9,999)
    (100_000, (80_000, 67_000, 47_000, 47_000, 77_000)),
    (200_000, (180_000, 167_000, 147_000, 147_000, 177_000)),
    (1_000_000, (980_000, 967_000, 947_000, 947_000, 977_000)),
])
def test_cc_thresholds_are_claude_codes_at_every_window(tmp_path, policy, window, marks):
    config = _config(tmp_path, context_window=window, policy=policy)
    assert _marks(config.budget()) == marks
    # watch and replay read the policy from a session's logged config and agree
    assert _marks(budget_for(MODEL, BudgetSettings.from_logged(config.public_dict())).budget) == marks


@pytest.mark.parametrize("model, window, marks", [
    (MODEL, 30_000, (27_000, 25_050, 22_050, 23_550, 26_550)),
    (MODEL, 60_000, (54_000, 50_100, 44_100, 47_100, 53_100)),
    (MODEL, 100_000, (90_000, 83_500, 73_500, 78_500, 88_500)),
    (MODEL, 200_000, (180_000, 167_000, 147_000, 157_000, 177_000)),
    (MODEL, 1_000_000, (980_000, 967_000, 947_000, 957_000, 977_000)),
    ("demo", 30_000, (27_000, 25_050, 22_050, 23_550, 26_550)),
    ("demo", 100_000, (96_000, 89_500, 79_500, 84_500, 94_500)),
])
def test_the_default_policys_thresholds_are_unchanged(model, window, marks):
    assert _marks(budget_for(model, BudgetSettings(context_window=window)).budget) == marks
    assert _marks(budget_for(model, BudgetSettings(context_window=window, policy="ctxtui")).budget) == marks


def test_claude_codes_reserve_is_at_most_the_models_max_output():
    b = ContextBudget(100_000, 4_000, **CLAUDE_CODE)         # min(max output, 20,000)
    assert _marks(b) == (96_000, 83_000, 63_000, 63_000, 93_000)


def test_a_window_too_small_for_claude_codes_buffers_gets_the_default_ones():
    for window, out in ((30_000, 32_000), (53_000, 32_000), (20_000, 4_000), (60_000, 32_000), (99_999, 32_000)):
        cc, default = ContextBudget(window, out, **CLAUDE_CODE), ContextBudget(window, out)
        assert not cc.buffers_fit and _marks(cc) == _marks(default)
    assert ContextBudget(100_000, 32_000, **CLAUDE_CODE).buffers_fit     # Claude Code's smallest window
    # the same buffers without the floor still fit down to about 54,000 (warning at 1,000)
    floorless = {k: v for k, v in CLAUDE_CODE.items() if k != "buffers_min_window"}
    assert ContextBudget(54_000, 32_000, **floorless).buffers_fit


def test_a_users_threshold_still_moves_cc_and_keeps_the_order(tmp_path):
    b = _config(tmp_path, context_window=100_000, policy="cc", autocompact_pct=50).budget()
    assert b.autocompact_threshold == 40_000 and b.blocking_limit == 77_000
    assert 0 < b.warning_threshold <= b.error_threshold < b.autocompact_threshold


def test_the_demo_runs_under_cc_at_its_small_window(tmp_path):
    """The demo's 30,000 window cannot hold Claude Code's buffers; cc starts with the default ones."""
    cfg = load_config({"model": "demo", "policy": "cc"}, environ=user_dirs(), workspace=tmp_path)
    assert _marks(cfg.budget()) == _marks(load_config({"model": "demo"}, environ=user_dirs(),
                                                      workspace=tmp_path).budget())
