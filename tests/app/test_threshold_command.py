"""The auto-compact threshold is the user's (issue 27): `/threshold 70%`, a token count or
`default`, and Alt+Up / Alt+Down, move it live within safe bounds (a clear error outside them),
the gauge's mark follows, and it is kept per model in the user config file. Snapshots at 80×24 and
120×40 after a move."""
from __future__ import annotations

import tomllib

import pytest

from agent_core.config import PCT_BY_MODEL, load_config
from agent_core.loop.factory import build_agent
from agent_core.threshold_store import save
from app.tui.app import CtxApp
from app.widgets.gauge import Gauge
from compaction.accounting.budget import ContextBudget
from tests.agent_helpers import make_workspace, user_dirs
from tests.app.snapshot_helpers import fill, settled
from tests.tui_fakes import FIXED_TIME, FakeAgent


async def type_command(pilot, app, text: str) -> None:
    app.prompt_input.clear()
    app.prompt_input.insert(text)
    await pilot.press("enter")
    await pilot.pause()
    for _ in range(50):
        if not app.figures.scheduled:
            break
        await pilot.pause(0.01)


def budget_of(app) -> ContextBudget:
    return app.agent.budget


async def test_threshold_moves_up_and_down_within_bounds_and_the_gauge_follows():
    agent = FakeAgent(window=200_000)
    app = CtxApp(agent, clock=lambda: FIXED_TIME)
    async with app.run_test(size=(120, 40)) as pilot:
        await type_command(pilot, app, "/threshold 70%")
        assert agent.threshold_pct == 70 and app.context_pane.context.threshold == int(199_000 * 0.7)
        assert app.query_one(Gauge).threshold == app.context_pane.context.threshold
        await type_command(pilot, app, "/threshold 120k")
        assert app.context_pane.context.threshold == 120_000
        await pilot.press("alt+up")
        await pilot.pause(0.05)
        assert agent.threshold_pct == pytest.approx(100 * 120_000 / 199_000 + 1, abs=0.06)
        await pilot.press("alt+down", "alt+down")
        await pilot.pause(0.05)
        assert agent.threshold_pct == pytest.approx(100 * 120_000 / 199_000 - 1, abs=0.06)
        before = agent.threshold_pct
        await type_command(pilot, app, "/threshold 99.9%")      # above blocking less the margin
        assert agent.threshold_pct == before
        await type_command(pilot, app, "/threshold lots")
        assert agent.threshold_pct == before
        await type_command(pilot, app, "/threshold default")
        assert agent.threshold_pct is None and agent.kept[-1] is None
        assert agent.kept[:2] == [70, pytest.approx(100 * 120_000 / 199_000)]


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
def test_the_screen_after_a_threshold_move(snap_compare, utc, size):
    app = CtxApp(FakeAgent(window=200_000), clock=lambda: FIXED_TIME)

    async def run_before(pilot):
        await fill(app, "warning", pilot)
        await type_command(pilot, app, "/threshold 80%")
        await settled(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


def test_a_real_agent_refuses_a_threshold_outside_the_bounds_and_keeps_it_per_model(tmp_path):
    ws = make_workspace(tmp_path)
    cfg_file = tmp_path / "config" / "ctxtui" / "config.toml"
    cfg_file.parent.mkdir(parents=True)
    cfg_file.write_text("# my settings\ncontext_window = 30000\n")
    env = {**user_dirs(), "CTXTUI_CONFIG": str(cfg_file)}
    agent = build_agent(load_config({"model": "demo"}, environ=env, workspace=ws), interactive=False)
    b = agent.set_threshold(60)
    assert b.autocompact_threshold == int(b.effective_window * 0.6) and agent.budget is b
    with pytest.raises(ValueError, match=r"at most 97\.2%"):
        agent.set_threshold(99)
    with pytest.raises(ValueError, match="must be at least"):
        agent.set_threshold(1)
    assert "kept for demo in" in agent.keep_threshold(60)
    text = cfg_file.read_text()
    assert text.startswith("# my settings\ncontext_window = 30000\n")     # the user's file, edited in place
    assert tomllib.loads(text)[PCT_BY_MODEL] == {"demo": 60}
    again = load_config({"model": "demo"}, environ=env, workspace=ws)
    assert again.autocompact_pct == 60 and again.sources["autocompact_pct"] == "user file, this model"
    flagged = load_config({"model": "demo", "autocompact_pct": 75}, environ=env, workspace=ws)
    assert flagged.autocompact_pct == 75 and flagged.sources["autocompact_pct"] == "flag"   # one setting


def test_saving_keeps_a_symlinked_file_a_link_and_a_new_file_private(tmp_path):
    real = tmp_path / "dotfiles" / "config.toml"
    real.parent.mkdir()
    real.write_text("model = 'demo'\n")
    link = tmp_path / "config.toml"
    link.symlink_to(real)
    save(link, "claude-sonnet-4-6", 70.5)
    assert link.is_symlink() and tomllib.loads(real.read_text())[PCT_BY_MODEL] == {"claude-sonnet-4-6": 70.5}
    save(link, "claude-sonnet-4-6", None)
    assert tomllib.loads(real.read_text())[PCT_BY_MODEL] == {}
    fresh = tmp_path / "new" / "config.toml"
    save(fresh, "demo", 80)
    assert (fresh.stat().st_mode & 0o777) == 0o600
    (tmp_path / "bad.toml").write_text("= not toml")
    with pytest.raises(ValueError, match="not valid TOML"):
        save(tmp_path / "bad.toml", "demo", 80)
