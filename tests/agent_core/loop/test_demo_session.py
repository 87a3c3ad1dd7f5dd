"""The demo model driven by the real loop, offline, in this repository (the README's promise)."""
from __future__ import annotations

from pathlib import Path

from agent_core import events as ev
from compaction import project, validate_history

from tests.agent_helpers import collect, demo_agent, of

ROOT = Path(__file__).resolve().parents[3]
PROMPTS = ["explore this repository", "how does compaction work?", "what does the agent loop do?",
           "explain the tools and the sandbox", "how are costs computed?", "describe the TUI widgets",
           "how are sessions saved and resumed?", "what do the tests cover?"]


async def run_prompts(agent) -> list[set[str]]:
    seen = []
    for p in PROMPTS:
        events = await collect(agent.run(p))
        assert events[-1].stop_reason == "end_turn", of(events, ev.Error)
        assert validate_history(project(agent.entries)) == []
        seen.append({c.layer for c in of(events, ev.Compaction)})
    await agent.aclose()
    return seen


async def test_demo_auto_compacts_within_8_prompts(tmp_path):
    # microcompact is not required here: on a warm cache it clears only when that pays (issue 13),
    # and the demo answers within seconds (compaction/cache_economics.py; tests/compaction)
    agent = demo_agent(ROOT, home=str(tmp_path), disable_collapse=True)
    assert agent.info.context_window == 30_000 and agent.info.offline
    seen = set().union(*await run_prompts(agent))
    assert seen & {"session_memory", "autocompact"}, seen


async def test_demo_default_pipeline_collapses_before_it_summarizes(tmp_path):
    agent = demo_agent(ROOT, home=str(tmp_path))
    agent.pipeline.config.cache_aware = False   # the token-only rules: each cheap layer's turn comes
    per_prompt = await run_prompts(agent)
    seen = set().union(*per_prompt)
    assert {"microcompact", "collapse"} <= seen, per_prompt
    # the session log on disk rebuilds the same working history
    from agent_core.sessions.session_reader import load_session
    loaded = load_session(agent.session.path)
    assert [e.uuid for e in loaded.entries] == [e.uuid for e in agent.entries]
    costs = agent.cost_event()
    assert costs.total_usd and costs.total_usd > 0 and costs.cache_hit_rate > 0.3


# The twelve prompts of the demo session a user is shown (issue 14): the default window, the
# engine's default (cache-aware) rules, one manual /compact with a focus (the LLM summary).
TWELVE = ["explore this repository", "how does compaction work?", "what does the agent loop do?",
          "explain the tools and the sandbox", "how are costs computed?", "describe the TUI widgets",
          "compact the conversation, focusing on the compaction layers", "how are sessions saved and resumed?",
          "what do the tests cover?", "how is the cache priced?", "what are the breakers?",
          "how do permissions work?"]


async def test_twelve_prompt_demo_shows_the_layers_and_states_without_blocking(tmp_path):
    agent = demo_agent(ROOT, home=str(tmp_path))
    threshold = agent.pipeline.config.budget.autocompact_threshold
    states, comps = set(), []
    for p in TWELVE:
        events = await collect(agent.run(p))
        assert events[-1].stop_reason == "end_turn", of(events, ev.Error)
        assert not of(events, ev.Error), of(events, ev.Error)
        states |= {c.state for c in of(events, ev.ContextUpdate)}
        comps += of(events, ev.Compaction)
    await agent.aclose()
    layers = {c.layer for c in comps}
    # the gauge reaches AUTO-COMPACT before the compaction at the threshold lands, never BLOCKING
    assert {"warning", "error", "autocompact"} <= states and "blocking" not in states, states
    assert {"tool_result_budget", "session_memory", "autocompact"} <= layers, layers
    # session memory acts early when it pays, and at least once at the auto-compact threshold
    assert any(c.layer == "session_memory" and c.tokens_before < threshold for c in comps)
    assert any(c.layer == "session_memory" and c.tokens_before >= threshold for c in comps)
    assert any(c.layer == "autocompact" and c.trigger == "manual" for c in comps)
