"""The demo's tour: a dozen prompts and one `/wait` that show, at the demo's default window, the
layers a default session uses act — the tool-result budget, session memory at the auto-compact
threshold (under it only when that pays after the re-reads it would cause are priced, which a
tour of file reads never does: docs/engine-dollars.md, "What a compaction costs"), microcompact
once the cache has gone cold, and the LLM summary of `/compact` — and the context state move
through warning, error and auto-compact without getting stuck in blocking.

The README lists the steps for a user to type; `docs/demo_session.py` runs them through the real
loop over this repository and prints the state after each (`--check`: and whether `promises`
holds); the tests run it over a fixed project (tests/demo_project.py). What the demo reads depends
on the files it finds, so the figures move with the workspace. Snip and collapse are the engine's
fallbacks for when summarizing cannot run: the demo started with `FALLBACK_ENV` shows them
(compaction/layers/snip.py, compaction/layers/collapse.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, AsyncIterator

from compaction.accounting.budget import ContextBudget

from agent_core import events as ev
from agent_core.providers.demo.pause import describe, let_time_pass

WAIT = "/wait"
TOUR: tuple[str, ...] = (
    "explore this repository",
    WAIT,
    "how does compaction work?",
    "read every file in compaction/",
    "what does the agent loop do?",
    "explain the tools and the sandbox",
    "how are costs computed?",
    "describe the TUI widgets",
    "compact the conversation, focusing on the compaction layers",
    "how are sessions saved and resumed?",
    "what do the tests cover?",
    "how is the cache priced?",
    "what are the breakers?",
)
FALLBACK_ENV = {"CTXTUI_DISABLE_AUTOCOMPACT": "1"}


@dataclass
class Step:
    """One step of the tour as the user saw it."""
    prompt: str
    tokens: int = 0                 # the context figure after the step
    window: int = 0
    state: str = "ok"               # the state after the step
    states: list[str] = field(default_factory=list)        # every state shown during it, in order
    compactions: list[ev.Compaction] = field(default_factory=list)
    said: str = ""                  # what /wait told the user
    stop_reason: str | None = None
    errors: list[str] = field(default_factory=list)
    events: list[ev.Event] = field(default_factory=list)    # everything the loop said, in order


async def walk(agent: Any, steps: tuple[str, ...] = TOUR) -> AsyncIterator[Step]:
    """Run the steps through the agent's own loop (a demo agent: /wait refuses a real model)."""
    for prompt in steps:
        step = Step(prompt)
        if prompt.split()[0] == WAIT:
            step.said = describe(let_time_pass(agent, prompt[len(WAIT):]))
            ctx = agent.context_event()
            step.tokens, step.window, step.state = ctx.tokens, ctx.window, ctx.state
            yield step
            continue
        async for e in agent.run(prompt):
            step.events.append(e)
            if isinstance(e, ev.ContextUpdate):
                step.tokens, step.window, step.state = e.tokens, e.window, e.state
                if not step.states or step.states[-1] != e.state:
                    step.states.append(e.state)
            elif isinstance(e, ev.Compaction):
                step.compactions.append(e)
            elif isinstance(e, ev.Error):
                step.errors.append(e.message)
            elif isinstance(e, ev.TurnFinished):
                step.stop_reason = e.stop_reason
        yield step


def promises(steps: list[Step], budget: ContextBudget) -> list[str]:
    """What the tour promises and these steps did not keep, in words (empty: all kept)."""
    broken: list[str] = []
    states = {x for s in steps for x in s.states}
    missing = {"warning", "error", "autocompact"} - states
    if missing:
        broken.append(f"the state never reached {', '.join(sorted(missing))}")
    for s in steps:
        if s.errors or not (s.said or s.stop_reason == "end_turn"):
            broken.append(f"{s.prompt!r} did not end normally: {s.stop_reason}; {'; '.join(s.errors)}")
        if "blocking" in s.states or s.state == "blocking":
            broken.append(f"{s.prompt!r} went to BLOCKING")
    comps = [c for s in steps for c in s.compactions]
    waits = [i for i, s in enumerate(steps) if s.said]
    if not waits or waits[0] + 1 >= len(steps):
        broken.append("no prompt after /wait")
    else:
        w = waits[0]
        if any(c.layer == "microcompact" for s in steps[:w] for c in s.compactions):
            broken.append("microcompact acted before /wait, on a warm cache")
        if not any(c.layer == "microcompact" and (c.cache or {}).get("reason") == "cold"
                   for c in steps[w + 1].compactions):
            broken.append("microcompact did not clear old results on the cold cache after /wait")
    memory = [c for c in comps if c.layer == "session_memory"]
    if not any(budget.autocompact_threshold <= c.tokens_before < budget.blocking_limit for c in memory):
        broken.append("session memory never acted at the auto-compact threshold")
    if not any(c.layer == "tool_result_budget" for c in comps):
        broken.append("the tool-result budget never acted")
    if not any(c.layer == "autocompact" and c.trigger == "manual" for c in comps):
        broken.append("no model-written summary for the compact request")
    return broken
