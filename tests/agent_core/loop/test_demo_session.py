"""The demo model driven by the real loop, offline, in this repository (the README's promise)."""
from __future__ import annotations

from pathlib import Path

from agent_core import events as ev
from agent_core.providers.demo.tour import walk
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


# The demo's tour (agent_core/providers/demo/tour.py) over this repository, as the README lists it.
# What the demo reads depends on the repository's files: if a change moves its reads so that a
# promise below fails, retune TOUR (docs/demo_session.py prints every step).


async def walk_tour(tmp_path, **cli) -> tuple[list, int, object]:
    agent = demo_agent(ROOT, home=str(tmp_path), **cli)
    threshold = agent.pipeline.config.budget.autocompact_threshold
    steps = []
    async for step in walk(agent):
        steps.append(step)
        assert validate_history(project(agent.entries)) == []
    await agent.aclose()
    return steps, threshold, agent


async def test_the_tour_shows_each_layer_and_state_without_blocking(tmp_path):
    steps, threshold, agent = await walk_tour(tmp_path)
    assert agent.info.context_window == 30_000 and len([s for s in steps if not s.said]) == 12
    for s in steps:
        assert not s.errors and (s.said or s.stop_reason == "end_turn"), (s.prompt, s.errors, s.stop_reason)
        assert s.state != "blocking" and "blocking" not in s.states, (s.prompt, s.states)
    states = {x for s in steps for x in s.states}
    assert {"warning", "error", "autocompact"} <= states, states
    comps = [c for s in steps for c in s.compactions]
    assert {"tool_result_budget", "session_memory", "microcompact", "autocompact"} <= {c.layer for c in comps}
    # microcompact acts once the cache has gone cold — after /wait, never before it
    wait = next(i for i, s in enumerate(steps) if s.said)
    assert "has expired" in steps[wait].said
    assert not [c for s in steps[:wait] for c in s.compactions if c.layer == "microcompact"]
    micro = [c for c in steps[wait + 1].compactions if c.layer == "microcompact"]
    assert micro and micro[0].trigger == "time" and micro[0].cache["reason"] == "cold"
    # session memory early when that pays, and at the auto-compact threshold (the gauge said it first)
    memory = [c for c in comps if c.layer == "session_memory"]
    assert any(c.tokens_before < threshold for c in memory) and any(c.tokens_before >= threshold for c in memory)
    assert any(c.layer == "autocompact" and c.trigger == "manual" for c in comps)


async def test_the_gauge_shows_each_figure_before_the_compaction_that_acts_on_it(tmp_path):
    """The count a summary at the threshold acts on is said (AUTO-COMPACT) before it lands, and tool
    results that take the count into the warning band are said before the pipeline runs."""
    steps, threshold, agent = await walk_tour(tmp_path)
    blocking = agent.pipeline.config.budget.blocking_limit
    at_threshold = 0
    for s in steps:
        for i, e in enumerate(s.events):
            if isinstance(e, ev.Compaction) and e.layer == "session_memory" and threshold <= e.tokens_before < blocking:
                said = [x for x in s.events[:i] if isinstance(x, ev.ContextUpdate)][-1]
                assert (said.tokens, said.state) == (e.tokens_before, "autocompact")
                at_threshold += 1
    assert at_threshold
    warned = [s for s in steps if "warning" in s.states]
    assert warned and all(s.state == "ok" for s in warned if s.compactions), [(s.prompt, s.states) for s in warned]


async def test_the_tour_without_summaries_shows_the_fallbacks(tmp_path):
    """Summarizing off (the README's second run): collapse and snip keep the session going."""
    steps, _threshold, _agent = await walk_tour(tmp_path, disable_autocompact=True)
    for s in steps:
        assert not s.errors and (s.said or s.stop_reason == "end_turn"), (s.prompt, s.errors, s.stop_reason)
        assert s.state != "blocking", (s.prompt, s.states)
    layers = {c.layer for s in steps for c in s.compactions}
    assert {"collapse", "snip", "microcompact"} <= layers, layers
