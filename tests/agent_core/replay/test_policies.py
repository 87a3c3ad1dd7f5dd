"""Each replay policy on a generated long session: `none` overflows at a small window, `cc` (the
engine under Claude Code's preset) compacts when its threshold is reached, `ctxtui` runs the real
engine and keeps a valid history."""
from __future__ import annotations

from compaction import project, validate_history
from compaction.cache_economics import REREAD_CALL_TOKENS

from agent_core.pricing.pricer import Pricer
from agent_core.replay.content import ContentIndex
from agent_core.replay.engine_policy import EnginePolicy, make_entry
from agent_core.replay.options import PolicySpec
from agent_core.replay.policies import NoCompaction, new_messages
from agent_core.replay.policy_config import engine_config
from agent_core.replay.references import ReferenceIndex
from agent_core.replay.runner import make_policy
from agent_core.replay.simulate import simulate
from agent_core.replay.summary_size import SummarySize
from agent_core.replay.synthetic import generate

WINDOW = 30_000


def run(policy, traj, window=WINDOW):
    return simulate(traj, policy, window=window, pricer=Pricer(), refs=ReferenceIndex(traj))


def preset_policy(name, traj, window=WINDOW, **settings):
    spec = PolicySpec(name, name, settings) if settings else PolicySpec(name, name)
    return make_policy(spec, traj, window=window, ttl="5m", size=SummarySize(1_500, "default", 1_500, 1_500),
                       pricer=Pricer())[0]


def cc_policy(traj, window=WINDOW):
    return preset_policy("cc", traj, window)


def test_none_keeps_everything_and_counts_overflows():
    traj = generate(120, seed=1, overhead=3_000)
    r = run(NoCompaction("5m"), traj)
    added = [traj.overhead_tokens + sum(m.tokens for q in traj.requests[:i + 1] for m in new_messages(q))
             for i in range(len(traj.requests))]
    assert r.context == added                          # nothing ever leaves
    assert r.overflows == sum(1 for c in added if c > WINDOW) > 0
    assert not r.compactions and r.compaction_cost_usd == 0
    assert r.cost_usd > 0 and abs(sum(r.cost_by_bucket.values()) - r.cost_usd) < 1e-9


def test_cc_compacts_when_the_threshold_is_reached():
    traj = generate(200, seed=2, overhead=3_000)
    policy = cc_policy(traj)
    r = run(policy, traj)
    threshold = policy.pipeline.budget.autocompact_threshold
    marks = [i for i, layer in r.markers if layer == "autocompact"]
    assert len(marks) >= 2 and r.overflows == 0
    # what request i - 1's re-reads added (simulate.py: their call and result stay in the context)
    reread = {i: sum(REREAD_CALL_TOKENS + u.tokens for u in uses if (i, u.path, True) in r.reread_events)
              for i, uses in enumerate(ContentIndex(traj).uses)}
    for i in marks:
        grown = r.context[i - 1] + reread[i - 1] + sum(m.tokens for m in new_messages(traj.requests[i]))
        assert grown >= threshold                      # it compacted only once the threshold was reached ...
        assert r.context[i - 1] < threshold            # ... not earlier
        assert r.context[i] < grown
    assert r.compaction_cost_usd > 0                   # the summary calls are priced
    assert r.compactions["autocompact"] == len(marks)
    # Claude Code's layers only: no snip, no count-based clearing, no collapse, no session notes
    assert set(r.compactions) <= {"autocompact", "microcompact", "tool_result_budget"}, r.compactions


def test_cc_summary_call_reads_the_main_prefix_from_the_cache():
    traj = generate(200, seed=2, overhead=3_000)
    policy = cc_policy(traj)
    r = run(policy, traj)
    assert r.tokens_by_bucket["cache_read"] > 0
    # the summary call reads the conversation the previous request wrote: the whole run's hit rate
    # stays high even though every compaction rewrites the context
    assert r.cache_hit_rate > 0.5


def test_cc_clears_old_results_after_an_hour_long_pause():
    traj = generate(150, seed=4, overhead=3_000, long_pause_every=3)
    r = run(cc_policy(traj, window=400_000), traj, window=400_000)
    assert r.compactions["microcompact"] >= 1
    assert "autocompact" not in r.compactions
    # the same session without the pauses: count-based clearing is not Claude Code's
    calm = generate(150, seed=4, overhead=3_000)
    assert "microcompact" not in run(cc_policy(calm, window=400_000), calm, window=400_000).compactions


def test_the_none_preset_on_the_engine_is_the_fast_path():
    """Replay runs `none` without an engine; the engine under the `none` preset sends the same."""
    traj = generate(120, seed=1, overhead=3_000)
    fast = run(NoCompaction("5m"), traj)
    engine = preset_policy("none", traj, cache_ttl="5m")      # a variant: runs through the engine
    assert isinstance(engine, EnginePolicy)
    slow = run(engine, traj)
    assert slow.context == fast.context and not slow.compactions
    assert abs(slow.cost_usd - fast.cost_usd) < 1e-9


def test_the_summary_preset_only_summarizes():
    traj = generate(200, seed=2, overhead=3_000)
    r = run(preset_policy("summary", traj), traj)
    assert set(r.compactions) <= {"autocompact", "tool_result_budget"} and r.compactions["autocompact"] >= 1


def test_ctxtui_runs_the_engine_and_keeps_a_valid_history():
    traj = generate(160, seed=5, overhead=3_000)
    config = engine_config(PolicySpec("ctxtui"), traj.model, WINDOW, "5m", traj.overhead_tokens, Pricer())
    policy = EnginePolicy(config, summary_tokens=1_500)
    layers = set()
    try:
        for req in traj.requests:
            step = policy.step(req)
            layers.update(step.compactions)
            assert validate_history(project(policy.view)) == []
            assert traj.overhead_tokens + sum(m.tokens for m in step.context) <= WINDOW
    finally:
        policy.close()
    assert layers                                       # the engine acted at this window


def test_ctxtui_entries_carry_the_calibrated_size():
    traj = generate(3, seed=6)
    m = traj.requests[0].added[0]
    e = make_entry(m.__class__(m.role, m.kind, 12_345, m.key, m.text, blocks=m.blocks), 0.0, None)
    assert e.tokens == 12_345


def test_ctxtui_overflows_none_where_none_overflows():
    traj = generate(160, seed=7, overhead=3_000)
    config = engine_config(PolicySpec("ctxtui"), traj.model, WINDOW, "5m", traj.overhead_tokens, Pricer())
    r = run(EnginePolicy(config, summary_tokens=1_500), traj)
    assert run(NoCompaction("5m"), traj).overflows > 0
    assert r.overflows == 0 and sum(r.compactions.values()) > 0


def test_a_replayed_summary_keeps_the_prompts_and_the_paths_at_its_size():
    """What Claude Code's summary prompt asks for (all user messages; files and code sections) is
    in the replay's summary, which stays the sized length; the newest prompts win when not all fit."""
    from compaction.sized_summary import sized_summary
    msgs = [{"role": "user", "content": "please fix src/app.py"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read_file",
                                               "input": {"path": "src/app.py"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "def f(): pass"},
                                         {"type": "text", "text": "and   then the tests"}]}]
    text = sized_summary(msgs, 2_000)
    assert len(text) == 2_000
    assert "- please fix src/app.py\n- and then the tests\n" in text and "- src/app.py\n" in text
    assert "def f()" not in text                        # paths, not contents
    again = sized_summary([{"role": "user", "content": text},
                           {"role": "user", "content": 'Re-attached: <file path="src/app.py">\ndef f(): pass\n</file>'},
                           *msgs], 2_000)
    assert again.count("- please fix src/app.py\n") == 1 and "Re-attached" not in again   # earlier summaries
    short = sized_summary(msgs, 120)
    assert len(short) == 120 and "and then the tests" in short and "please fix" not in short
