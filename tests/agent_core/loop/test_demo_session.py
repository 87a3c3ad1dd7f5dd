"""The demo model driven by the real loop, offline, in this repository (the README's promise)."""
from __future__ import annotations


from agent_core import events as ev
from agent_core.config import load_config
from agent_core.loop.factory import build_agent
from agent_core.providers.demo.tour import Step, promises, walk
from compaction.accounting.budget import ContextBudget
from compaction import project, validate_history

from tests.agent_helpers import collect, demo_agent, of
from tests.demo_project import fixed_place
from agent_core.sessions.session_reader import load_session

PROMPTS = ["explore this repository", "how does compaction work?", "what does the agent loop do?",
           "explain the tools and the sandbox", "how are costs computed?", "describe the TUI widgets",
           "how are sessions saved and resumed?", "what do the tests cover?"]


async def run_prompts(agent, prompts: list[str] = PROMPTS) -> list[list[str]]:
    """Each prompt's compactions, layer by layer in the order they acted."""
    seen = []
    for p in prompts:
        events = await collect(agent.run(p))
        assert events[-1].stop_reason == "end_turn", of(events, ev.Error)
        assert validate_history(project(agent.entries)) == []
        seen.append([c.layer for c in of(events, ev.Compaction)])
    await agent.aclose()
    return seen


async def test_demo_auto_compacts_within_8_prompts():
    # microcompact is not required here: on a warm cache it clears only when that pays (issue 13),
    # and the demo answers within seconds (compaction/cache_economics.py; tests/compaction)
    with fixed_place() as (ws, env):      # what the demo reads: a fixed project, not this repository's files
        agent = demo_agent(ws, home=env["CTXTUI_HOME"], disable_collapse=True)
        assert agent.info.context_window == 30_000 and agent.info.offline
        seen = {layer for layers in await run_prompts(agent) for layer in layers}
    assert seen & {"session_memory", "autocompact"}, seen


# Long prompts (a pasted note each) that no cheap layer can clear, so the count climbs past
# microcompact's reach into collapse's and then the summaries'.
NOTE = " Context: " + "the user pasted a long note about the project. " * 300
LONG_PROMPTS = [p + NOTE for p in ["explore this repository", "how does compaction work?",
                                   "read every file in compaction/", "what does the agent loop do?",
                                   "explain the tools and the sandbox", "how are costs computed?",
                                   "describe the TUI widgets", "how are sessions saved and resumed?",
                                   "what do the tests cover?"]]


async def test_demo_default_pipeline_collapses_before_it_summarizes():
    with fixed_place() as (ws, env):
        agent = demo_agent(ws, home=env["CTXTUI_HOME"])
        agent.pipeline.config.cache_aware = False   # the token-only rules: each cheap layer's turn comes
        per_prompt = await run_prompts(agent, LONG_PROMPTS)
        order = [layer for seen in per_prompt for layer in seen]
        assert {"microcompact", "collapse"} <= set(order), per_prompt
        summaries = [i for i, layer in enumerate(order) if layer in ("session_memory", "autocompact")]
        assert summaries and order.index("collapse") < summaries[0], per_prompt
        # the session log on disk rebuilds the same working history
        loaded = load_session(agent.session.path)
    assert [e.uuid for e in loaded.entries] == [e.uuid for e in agent.entries]
    costs = agent.cost_event()
    assert costs.total_usd and costs.total_usd > 0 and costs.cache_hit_rate > 0.3


# The demo's tour (agent_core/providers/demo/tour.py) over a fixed project at a fixed-length place
# (tests/demo_project.py), so the figures are the same on every machine. If a change to the demo or
# the engine breaks a promise, run docs/demo_session.py --check and retune TOUR.


async def walk_tour(**cli) -> tuple[list[Step], object]:
    """The tour through the loop, commands allowed as a user of the TUI would allow them."""
    with fixed_place() as (ws, env):
        config = load_config({"model": "demo", "allow": ["all"], **cli}, environ=env, workspace=ws)
        agent = build_agent(config, interactive=False)
        steps = []
        async for step in walk(agent):
            steps.append(step)
            assert validate_history(project(agent.entries)) == []
        await agent.aclose()
    return steps, agent


async def test_the_tour_keeps_its_promises():
    """Each default layer acts (microcompact only after /wait, on the cold cache; session memory at
    the threshold), the state goes through warning, error and auto-compact, and no step ends in
    BLOCKING. Session memory under the threshold does not act here: the tour reads files, and
    removing them early costs more in re-reads than it saves (issue 25; tests/compaction hold when it does)."""
    steps, agent = await walk_tour()
    assert agent.info.context_window == 30_000 and len([s for s in steps if not s.said]) == 12
    assert promises(steps, agent.pipeline.config.budget) == []


def test_a_broken_promise_is_named():
    """The check itself can fail: a tour with no /wait, no threshold and a blocked step says so."""
    budget = ContextBudget(context_window=30_000)
    steps = [Step("hello", states=["ok", "blocking"], state="blocking", stop_reason="blocking")]
    broken = " | ".join(promises(steps, budget))
    for words in ("never reached autocompact, error, warning", "'hello' did not end normally", "BLOCKING",
                  "no prompt after /wait", "at the auto-compact threshold",
                  "tool-result budget", "model-written summary"):
        assert words in broken, (words, broken)


async def test_the_gauge_shows_each_figure_before_the_compaction_that_acts_on_it():
    """The count a summary at the threshold acts on is said (AUTO-COMPACT) before it lands, and tool
    results that take the count into the warning band are said before the pipeline runs."""
    steps, agent = await walk_tour()
    budget = agent.pipeline.config.budget
    at_threshold = 0
    for s in steps:
        for i, e in enumerate(s.events):
            if (isinstance(e, ev.Compaction) and e.layer == "session_memory"
                    and budget.autocompact_threshold <= e.tokens_before < budget.blocking_limit):
                said = [x for x in s.events[:i] if isinstance(x, ev.ContextUpdate)][-1]
                assert (said.tokens, said.state) == (e.tokens_before, "autocompact")
                at_threshold += 1
    assert at_threshold
    warned = [s for s in steps if "warning" in s.states or "error" in s.states]
    assert warned


async def test_the_tour_without_summaries_shows_the_fallbacks():
    """Summarizing off (the README's second run): collapse and snip keep the session going."""
    steps, _agent = await walk_tour(disable_autocompact=True)
    for s in steps:
        assert not s.errors and (s.said or s.stop_reason == "end_turn"), (s.prompt, s.errors, s.stop_reason)
        assert s.state != "blocking", (s.prompt, s.states)
    layers = {c.layer for s in steps for c in s.compactions}
    assert {"collapse", "snip", "microcompact"} <= layers, layers
