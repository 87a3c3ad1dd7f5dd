"""`ctxtui replay --policy server`: the server engine estimated from the API's documented rules —
old tool results cleared past half the window (all but the newest five), compaction at the
auto-compact threshold — and said to be an estimate."""
from __future__ import annotations

import pytest

from compaction.accounting.budget import ContextBudget

from agent_core.pricing.pricer import Pricer
from agent_core.replay.options import ReplayUsageError, make_options, parse_policy
from agent_core.replay.policies import new_messages
from agent_core.replay.policy_server import CLEARED_TOKENS, NOTE, SERVER, ServerLike
from agent_core.replay.references import ReferenceIndex
from agent_core.replay.runner import run_replay
from agent_core.replay.simulate import simulate
from agent_core.replay.synthetic import generate

WINDOW = 30_000


def _policy(traj, window=WINDOW):
    return ServerLike(overhead=traj.overhead_tokens, window=window, max_output=32_000, ttl="5m",
                      summary_tokens=1_500, prompt_tokens=600)


def test_clears_past_half_the_window_then_compacts_at_the_threshold():
    traj = generate(200, seed=2, overhead=3_000)
    policy = _policy(traj)
    r = simulate(traj, policy, window=WINDOW, pricer=Pricer(), refs=ReferenceIndex(traj))
    threshold = ContextBudget(context_window=WINDOW, max_output_tokens=32_000).autocompact_threshold
    assert r.compactions["server_clear_tool_uses"] > 0 and r.compactions["server_compact"] > 0
    assert r.overflows == 0 and r.compaction_cost_usd > 0 and policy.compact_trigger == threshold
    marks = [i for i, layer in r.markers if layer == "server_compact"]
    for i in marks:
        assert r.context[i] == traj.overhead_tokens + 1_500       # the context became the compaction block
    # Whatever the server clears, the model still sees the newest five results whole.
    fresh, checked = _policy(traj), 0
    for req in traj.requests:
        fresh.step(req)
        shown, cleared = fresh._shown()
        if not cleared:
            continue
        results = [m for m in shown if m.kind == "tool_result"]
        assert not any(m.key.endswith(":server-cleared") for m in results[-5:])
        assert all(m.key.endswith(":server-cleared") and m.tokens <= CLEARED_TOKENS for m in results[:-5])
        checked += 1
    assert checked > 0


def test_nothing_is_cleared_below_the_trigger():
    traj = generate(6, seed=3, overhead=1_000)
    policy = _policy(traj, window=1_000_000)
    for req in traj.requests:
        step = policy.step(req)
        assert not step.compactions
    assert sum(m.tokens for m in policy.history) == sum(m.tokens for q in traj.requests for m in new_messages(q))


def test_the_policy_is_asked_for_by_name_and_labelled_an_estimate(tmp_path):
    assert parse_policy("server").base == SERVER
    with pytest.raises(ReplayUsageError):
        parse_policy("server:CTXTUI_CACHE_TTL=1h")       # the name is taken by the estimate
    log = tmp_path / "x.jsonl"
    log.write_text("")
    options = make_options([str(log)], ["server"])
    assert SERVER in options.policy_names()
    report = run_replay(options, trajectories=[generate(120, seed=4, overhead=3_000)]).to_json()
    assert NOTE in report["limits"] and "estimate" in NOTE
