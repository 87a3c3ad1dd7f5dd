"""Issue 12, problems 1 and 2, through the real SDK against the fake server: the context figure,
its categories and the summarizer all see the projected view (collapse included)."""
from __future__ import annotations

import pytest

from agent_core import events as ev
from compaction import project, validate_history
from compaction.accounting.tokens import estimate_message
from tests.fake_anthropic import FakeAnthropic, is_summary_request

from tests.agent_helpers import collect, fake_agent, heavy_tool_session, make_workspace, of

USED = ("system", "tools", "user_text", "assistant_text", "tool_calls", "tool_results", "summaries")


@pytest.mark.slow
async def test_categories_add_up_to_the_count_and_the_summarizer_reads_the_collapsed_view(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic(responder=heavy_tool_session(ws)) as fake:
        agent = fake_agent(ws, fake.base_url, allow=["bash"], context_window=20_000)
        agent.pipeline.config.early_compaction = False   # the collapsed view is under test: no notes before it
        updates, layers = [], set()
        for k in range(10):
            events = await collect(agent.run(f"prompt {k}"))
            layers |= {c.layer for c in of(events, ev.Compaction)}
            updates += of(events, ev.ContextUpdate)
        assert "collapse" in layers, layers
        assert agent.pipeline.state.of("collapse").get("spans")
        # problem 1: every figure's categories sum exactly to the count, and with free and buffer to the window
        for u in updates:
            assert sum(u.categories[c] for c in USED) == u.tokens, (u.tokens, u.categories)
            assert sum(u.categories.values()) == u.window, (u.window, u.categories)
        # the figure shown now is the projected count, not the stored history's
        assert agent.context_event().tokens == updates[-1].tokens

        # problem 2: a manual /compact (with a focus, so the model summarizes) reads the collapsed view
        n_before = len(fake.message_requests)
        events = await collect(agent.compact("the plan"))
        await agent.aclose()
    summary_reqs = [r for r in fake.message_requests[n_before:] if is_summary_request(r)]
    assert summary_reqs, of(events, ev.Error)
    sent = summary_reqs[0]["messages"]
    assert "[collapsed" in str(sent)
    est = sum(estimate_message(m) for m in sent)
    assert est <= 20_000, est
    assert all(r.status == 200 for r in fake.requests)
    assert validate_history(project(agent.entries)) == []
