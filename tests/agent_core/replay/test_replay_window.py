"""Replay's window follows the project's one rule (providers/models_info.py, issue 24): an Opus 4.6
Claude Code log is replayed at 200k unless it shows the 1M context (a `[1m]` id or a request above
200k); a ctxtui log at the window its session logged."""
from __future__ import annotations

import pytest

from agent_core.logs.trajectory import Message, Request, Trajectory
from agent_core.replay.options import make_options
from agent_core.replay.runner import run_replay
from agent_core.replay.window import replay_limits

OPUS = "claude-opus-4-6"
STEP = 17_000


def opus_session(requests: int, model: str = OPUS) -> Trajectory:
    """Each request adds a 17,000-token prompt on a 20,000-token head, the cache read the last."""
    out, total = [], 20_000
    for i in range(requests):
        m = Message("user", "prompt", STEP, f"p{i}", text=f"step {i}")
        usage = {"input": 0, "output": 100, "cache_read": total, "cache_write_5m": STEP, "cache_write_1h": 0}
        total += STEP
        out.append(Request(i, 60.0 * i, model, [m], Message("assistant", "assistant", 100, f"a{i}"), usage))
    return Trajectory("s.jsonl", "s", model, overhead_tokens=20_000, requests=out)


def replayed(tmp_path, traj, **kw):
    (tmp_path / "s.jsonl").write_text("")
    return run_replay(make_options([str(tmp_path / "s.jsonl")], **kw), trajectories=[traj]).to_json()["sessions"][0]


def test_an_opus_4_6_log_that_stayed_under_200k_is_replayed_at_200k_and_cc_compacts(tmp_path):
    traj = opus_session(10)                                   # up to 190,000 tokens
    assert replay_limits(traj).context_window == 200_000
    s = replayed(tmp_path, traj)
    assert s["window"] == 200_000
    assert s["policies"]["cc"]["compactions"].get("autocompact", 0) >= 1


@pytest.mark.parametrize("traj", [opus_session(14), opus_session(6, model=OPUS + "[1m]")],
                         ids=["a request above 200k", "a [1m] model id"])
def test_an_opus_4_6_log_that_shows_the_1m_context_is_replayed_at_1m(tmp_path, traj):
    assert replay_limits(traj).context_window == 1_000_000
    s = replayed(tmp_path, traj)
    assert s["window"] == 1_000_000
    assert s["policies"]["none"]["overflows"] == 0 and not s["policies"]["cc"]["compactions"]


def test_the_window_flag_wins(tmp_path):
    assert replayed(tmp_path, opus_session(14), window=60_000)["window"] == 60_000


def test_a_ctxtui_log_is_replayed_at_its_logged_window_and_1m_setting():
    traj = opus_session(3)
    traj.source = "ctxtui"
    traj.logged_config = {"context_window": 20_000}
    assert replay_limits(traj).context_window == 20_000
    traj.logged_config = {"long_context": True}
    assert replay_limits(traj).context_window == 1_000_000
    traj.logged_config = {"long_context": False}
    assert replay_limits(opus_session(14)).context_window == 1_000_000   # a Claude Code log shows it
    assert replay_limits(traj).context_window == 200_000
    assert replay_limits(traj, 50_000).context_window == 50_000
