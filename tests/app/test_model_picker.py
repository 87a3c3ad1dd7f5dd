"""/model with no name: a picker of the known models with their window and prices per million
tokens (from the shipped rates table through the pricer), the current one marked, and what the
switch costs (the context written again to the new model's cache). Choosing one does what
`/model NAME` does; an error from /model names /model, not the command-line flag."""
from __future__ import annotations

import pytest
from textual.widgets import OptionList, Static

from agent_core.pricing import rates_table
from agent_core.pricing.cost import DEMO_PRICED_AS
from agent_core.pricing.pricer import Pricer
from agent_core.providers.model_choices import choices, known_models
from app.tui import commands
from app.tui.app import CtxApp
from app.tui.screens.help import help_text
from app.format import usd as fmt_usd
from app.tui.screens.model_picker import ModelPicker, switch_text
from app.tui.widgets.conversation.error_message import ErrorRecord
from tests.agent_helpers import make_workspace
from tests.app.snapshot_helpers import fill, settled
from tests.app.tui_helpers import fake_app, make_app, wait_idle
from tests.fake_anthropic import FakeAnthropic
from tests.pilot_until import until
from tests.tui_fakes import FIXED_TIME, FakeAgent

SIZE = (80, 24)


def screen_lines(app) -> list[str]:
    return [strip.text for strip in app.screen._compositor.render_strips()]


# ---- the choices --------------------------------------------------------------------------------

def test_the_known_models_are_the_rates_tables_without_dated_aliases():
    models = known_models()
    assert "claude-opus-4-5" in models and "claude-opus-4-5-20251101" not in models
    assert "claude-opus-4-0" in models and "claude-opus-4-20250514" not in models
    assert "claude-3-opus-20240229" in models                  # no alias: the dated id is the name
    assert set(models) <= set(rates_table.MODELS)
    assert models.index("claude-opus-4-6") < models.index("claude-opus-4-5") < models.index("claude-3-opus-20240229")


def test_prices_come_from_the_shipped_table_and_the_switch_is_the_cache_write():
    pricer = Pricer(known=rates_table.load()[0])
    listed = {c.model: c for c in choices(ttl="1h", current="claude-sonnet-4-6")}
    opus = listed["claude-opus-4-6"]
    rates = pricer.rates("claude-opus-4-6")
    assert opus.per_million == pytest.approx({"input": rates["input"] * 1e6, "output": rates["output"] * 1e6,
                                              "cache_write": rates["cache_write_1h"] * 1e6,
                                              "cache_read": rates["cache_read"] * 1e6})
    assert opus.switch_cost(120_000) == pytest.approx(120_000 * rates["cache_write_1h"])
    assert opus.window == 200_000 and opus.window_note == "1M opt-in"
    demo = listed["demo"]
    assert demo.priced_as == DEMO_PRICED_AS and demo.per_million == listed[DEMO_PRICED_AS].per_million
    assert list(listed)[0] == "demo"
    # a model the table does not know is listed (first) when it is the current one, price unknown
    custom = choices(current="my-proxy-model")
    assert custom[1].model == "my-proxy-model" and custom[1].per_million is None
    assert "not known" in switch_text(custom[1], "demo", 5_000, "5m")
    # the switch starts a new session: its first request writes the head, not this conversation
    said = switch_text(opus, "demo", 120_000, "1h", head=3_000)
    assert "3,000 tokens, about $" in said and "(120,000 tokens) stays in this session" in said
    assert f"{fmt_usd(opus.switch_cost(3_000))}" in said


def test_model_takes_no_name_for_the_picker_and_help_says_so():
    assert commands.parse("/model") == commands.Parsed("model", "")
    assert commands.parse("/model demo") == commands.Parsed("model", "demo")
    assert "/model [NAME]" in help_text().plain


# ---- the picker -------------------------------------------------------------------------------------

async def test_the_picker_marks_the_current_model_says_the_switch_cost_and_switches(tmp_path):
    app, _ = make_app(make_workspace(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        first = app.agent
        tokens = first.context_event().tokens
        app.run_slash("/model")
        await until(pilot, lambda: isinstance(app.screen, ModelPicker), "the picker")
        await pilot.pause()
        lines = screen_lines(app)
        assert all(len(line.rstrip()) <= 80 for line in lines)
        assert any("● demo" in line and "30k" in line for line in lines), lines
        assert any("claude-opus-4-6" in line and "5.00" in line and "25.00" in line and "6.25" in line
                   for line in lines), lines
        cost = app.screen.query_one("#model-cost", Static)
        assert "demo is the model now" in str(cost.render())
        await pilot.press("down")
        await pilot.pause()
        said = " ".join(screen_lines(app))
        assert f"{tokens:,} tokens" in said and "uncached for" in said, said
        assert "claude-opus-5-5: it writes the system prompt and tools" in said, said
        assert any("Switch cost" in line for line in screen_lines(app)), "the cost line fits 24 rows"
        # a Claude model without ANTHROPIC_API_KEY: refused, in /model's words, the demo kept
        options = app.screen.query_one(OptionList)
        options.highlighted = next(i for i in range(options.option_count)
                                   if options.get_option_at_index(i).id == "claude-opus-4-6")
        await pilot.press("enter")
        await until(pilot, lambda: not isinstance(app.screen, ModelPicker), "the picker to close")
        await wait_idle(app, pilot)
        said = [n.message for n in app._notifications]
        assert any("/model claude-opus-4-6 needs an API key" in m for m in said), said
        assert not any("--model" in m for m in said), said
        assert app.agent is first
        # choosing the demo does what /model demo does: a new session on it
        app.run_slash("/model")
        await until(pilot, lambda: isinstance(app.screen, ModelPicker), "the picker")
        await pilot.press("enter")
        await until(pilot, lambda: app.agent is not first, "the switch")
        await wait_idle(app, pilot)
        assert app.agent.info.model == "demo" and app.agent.session_id != first.session_id
        # Esc closes it with nothing changed
        now = app.agent
        app.run_slash("/model")
        await until(pilot, lambda: isinstance(app.screen, ModelPicker), "the picker")
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, ModelPicker), "the picker to close")
        assert app.agent is now


async def test_a_model_the_api_does_not_know_names_model_not_the_flag(tmp_path):
    """The defect: after `/model NAME` the API's 404 said "(CTXTUI_MODEL or --model)"."""
    with FakeAnthropic(models={"claude-sonnet-4-6"}) as fake:
        app, _ = fake_app(make_workspace(tmp_path), fake.base_url)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            app.run_slash("/model claude-nonexistent-9")
            await until(pilot, lambda: app.agent.info.model == "claude-nonexistent-9", "the switch")
            await wait_idle(app, pilot)
            app.prompt_input.focus()
            app.fill_prompt("hello")
            await pilot.press("enter")
            await wait_idle(app, pilot)
            errors = app.conversation.records_of(ErrorRecord)
            assert errors, "the 404 is shown"
            message = errors[-1].message
            assert "claude-nonexistent-9" in message and "set with /model" in message, message
            assert "--model" not in message, message


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
def test_model_picker_snapshot(snap_compare, utc, size):
    app = CtxApp(FakeAgent(), clock=lambda: FIXED_TIME)

    async def run_before(pilot):
        await fill(app, "ok", pilot)
        app.run_slash("/model")
        await pilot.pause()
        await pilot.press("down", "down")
        await settled(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)
