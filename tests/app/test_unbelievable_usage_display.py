"""An answer whose usage says 10^30 input tokens (an attacker review): the context pane went to
BLOCKING during the run and the status bar showed 3e24 dollars. In the real app through the SDK
and the fake server: the conversation says the usage is not believable, the pane stays on the
estimate, and the app goes on to the next prompt."""
from __future__ import annotations

from app.tui.widgets.conversation.notice_message import NoticeRecord
from tests.agent_helpers import make_workspace
from tests.app.tui_helpers import fake_app, prompt
from tests.fake_anthropic import FakeAnthropic, reply


async def test_a_usage_of_10_to_the_30_is_said_not_shown_as_blocking(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic([reply("first", usage={"input_tokens": 10**30}), reply("second")]) as fake:
        app, _events = fake_app(ws, fake.base_url)
        async with app.run_test(size=(120, 40)) as pilot:
            await prompt(app, pilot, "hi")
            said = [r.text for r in app.conversation.records_of(NoticeRecord) if "not believable" in r.text]
            state, tokens = app.context_pane.state, app.context_pane.context.tokens
            cost = app.status.cost_usd
            await prompt(app, pilot, "go on")
            assert app.is_running and app.agent.turns == 2
    assert said and said[0].startswith("usage not believable: 1,000,000,000,000,000,000,000,000,000,000 tokens")
    assert state == "ok" and 0 < tokens < 100_000 and cost < 1
