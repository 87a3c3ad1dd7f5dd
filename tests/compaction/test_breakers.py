"""Breakers: consecutive failures, thrash, rejected results; state survives a resume."""
from __future__ import annotations

import json

from compaction import (BreakerConfig, CompactionReport, ContextBudget, LayerResult, Pipeline, PipelineConfig,
                        PipelineState, SummarizeError, boundary, user)
from compaction.breakers import Breakers

from tests.compaction.autocompact_helpers import SUMMARY, WINDOW, ScriptedSummarizer, make_pipeline, session

BIG = session(32)        # above the threshold of WINDOW
SMALL = session(2)


def transport() -> SummarizeError:
    return SummarizeError("connection reset by peer", transport=True)


async def test_three_failures_trip_the_breaker_and_no_fourth_call_is_made(tmp_path):
    s = ScriptedSummarizer(transport())
    p = make_pipeline(tmp_path, s, llm_only=True)
    r1 = await p.run(BIG)
    r2 = await p.run(BIG)
    assert len(s.calls) == 2 and not any(r.layer == "breaker" for r in r1.reports + r2.reports)
    assert r1.reports[0].details["failed"] and r1.reports[0].details["transport"]
    r3 = await p.run(BIG)
    assert len(s.calls) == 3
    trip = [r for r in r3.reports if r.layer == "breaker"]
    assert len(trip) == 1 and trip[0].details["breaker"] == "failures" and trip[0].trigger == "failures"
    assert "3 failures" in trip[0].action and "connection reset" in trip[0].action
    r4 = await p.run(BIG)
    assert len(s.calls) == 3 and r4.reports == [] and r4.entries == BIG
    assert p.auto_compact_stopped() == trip[0].action
    # reactive compaction is automatic too: it stops as well
    await p.compact(BIG, trigger="reactive")
    assert len(s.calls) == 3


async def test_manual_compaction_still_works_after_a_trip(tmp_path):
    s = ScriptedSummarizer(transport(), transport(), transport(), SUMMARY)
    p = make_pipeline(tmp_path, s, llm_only=True)
    for _ in range(3):
        await p.run(BIG)
    assert p.auto_compact_stopped()
    assert "/compact" in p.blocked(p.config.budget.blocking_limit) and "stopped" in p.blocked(10**9)
    res = await p.compact(BIG, trigger="manual")
    assert len(s.calls) == 4 and res.entries[0].kind == "compact_boundary"
    # issue 12, problem 6: a success clears the trip and the streak (it was sticky for the session)
    assert p.auto_compact_stopped() is None and p.state.of("breakers")["failures"] == 0


async def test_a_success_after_a_trip_lets_automatic_compaction_run_again(tmp_path):
    s = ScriptedSummarizer(transport(), transport(), transport(), SUMMARY, transport(), SUMMARY)
    p = make_pipeline(tmp_path, s, llm_only=True)
    for _ in range(3):
        await p.run(BIG)
    assert p.auto_compact_stopped() and len(s.calls) == 3
    await p.run(BIG)
    assert len(s.calls) == 3                     # tripped: no automatic attempt
    await p.compact(BIG, trigger="manual")       # the user's /compact succeeds
    assert p.auto_compact_stopped() is None
    r = await p.run(BIG)                         # automatic compaction is back: one failure is one failure
    assert len(s.calls) == 5 and not any(x.layer == "breaker" for x in r.reports)
    assert p.state.of("breakers")["failures"] == 1
    r = await p.run(BIG)
    assert len(s.calls) == 6 and r.entries[0].kind == "compact_boundary"
    assert p.state.of("breakers")["failures"] == 0


def test_a_trip_says_what_to_do():
    b = Breakers({}, BreakerConfig(max_failures=1))
    trip = b.record_failure("the summary call failed", "auto", 5)
    assert "/compact [focus] to retry now, or /clear" in trip.action
    t = Breakers({}, BreakerConfig(thrash_repeats=1))
    t.record_success()
    trip = t.note_turn(100, 50)
    assert trip is not None and "/compact [focus] to retry now, or /clear" in trip.action
    p = Pipeline(PipelineConfig(budget=ContextBudget(context_window=WINDOW)), None, [], layers=([], []))
    p.breakers().record_failure("x", "auto", 5)
    p.breakers().record_failure("x", "auto", 5)
    p.breakers().record_failure("x", "auto", 5)
    assert "/compact [focus] to retry now, or /clear" in p.blocked(10**9)


async def test_a_success_resets_the_failure_count(tmp_path):
    s = ScriptedSummarizer(transport(), transport(), SUMMARY, transport(), transport())
    p = make_pipeline(tmp_path, s, llm_only=True)
    for _ in range(5):
        await p.run(BIG)
    assert len(s.calls) == 5 and p.auto_compact_stopped() is None
    assert p.state.of("breakers")["failures"] == 2


async def test_rejected_results_count_as_failures(tmp_path):
    s = ScriptedSummarizer("")
    p = make_pipeline(tmp_path, s, llm_only=True)
    reports = []
    for _ in range(4):
        reports += (await p.run(BIG)).reports
    assert len(s.calls) == 3
    assert [r.details["breaker"] for r in reports] == ["rejected", "rejected", "rejected", "failures"]


class Shrink:
    """A stage that always succeeds: the history becomes one small summary."""
    name = "shrink"

    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self, entries, ctx):
        self.calls += 1
        new = [boundary(ctx.trigger, ctx.tokens, 10, None, self.name), user("summary", kind="summary")]
        return LayerResult(new, CompactionReport(self.name, ctx.trigger, "shrunk", ctx.tokens, 10))


def shrink_pipeline(state: PipelineState | None = None, **breakers) -> tuple[Pipeline, Shrink]:
    stage = Shrink()
    extra = {"breakers": BreakerConfig(**breakers)} if breakers else {}
    cfg = PipelineConfig(budget=ContextBudget(context_window=WINDOW), extra=extra)
    return Pipeline(cfg, None, [stage], state=state, layers=([], [])), stage


async def test_thrash_refilling_within_three_turns_three_times_trips():
    p, stage = shrink_pipeline()
    reports = []
    for _ in range(5):
        reports += (await p.run(BIG)).reports
    assert stage.calls == 3                                   # compactions 1-3; the 3rd refill trips
    trips = [r for r in reports if r.layer == "breaker"]
    assert len(trips) == 1 and trips[0].details["breaker"] == "thrash" and "refilled" in trips[0].action
    assert p.auto_compact_stopped() == trips[0].action


async def test_thrash_streak_breaks_when_a_compaction_holds():
    p, stage = shrink_pipeline()
    for _ in range(4):                # compact, hold for 3 turns, refill after the window: never thrash
        await p.run(BIG)
        for _ in range(3):
            await p.run(SMALL)
    assert stage.calls == 4 and p.auto_compact_stopped() is None
    await p.run(BIG)                  # turn after the window: the streak restarts
    await p.run(BIG)                  # refill 1
    await p.run(BIG)                  # refill 2
    assert p.auto_compact_stopped() is None
    await p.run(BIG)                  # refill 3: trip
    assert p.auto_compact_stopped() and stage.calls == 7


async def test_thrash_knobs_are_configurable():
    p, stage = shrink_pipeline(thrash_repeats=1)
    await p.run(BIG)
    await p.run(BIG)
    assert stage.calls == 1 and p.auto_compact_stopped()


async def test_breaker_state_is_json_and_survives_a_resume(tmp_path):
    s = ScriptedSummarizer(transport())
    p = make_pipeline(tmp_path, s, llm_only=True)
    for _ in range(3):
        await p.run(BIG)
    saved = json.loads(json.dumps(p.state.to_dict()))
    s2 = ScriptedSummarizer(SUMMARY)
    p2 = make_pipeline(tmp_path, s2, llm_only=True)
    p2.state = PipelineState.from_dict(saved)
    await p2.run(BIG)
    assert s2.calls == [] and p2.auto_compact_stopped()


def test_breakers_unit():
    state: dict = {}
    b = Breakers(state, BreakerConfig(max_failures=2))
    assert b.allows("auto") and b.record_failure("x", "auto", 5) is None
    trip = b.record_failure("y", "auto", 5)
    assert trip is not None and trip.layer == "breaker" and "y" in trip.action
    assert not b.allows("auto") and not b.allows("reactive") and b.allows("manual")
    assert b.record_failure("z", "auto", 5) is None           # one trip report only
    json.dumps(state)
