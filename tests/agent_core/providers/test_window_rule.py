"""One rule for a model's window (issue 24): a model whose 1M context is opt-in is 200k unless the
1M context is on — the setting for ctxtui, a `[1m]` id or a request above 200k for a log."""
from __future__ import annotations

import io
import json
from datetime import datetime, timezone

import pytest

from agent_core.config import load_config
from agent_core.context_budget import BudgetSettings, budget_for
from agent_core.providers.models_info import (LONG_WINDOW, STANDARD_WINDOW, model_limits, sends_long_context_beta,
                                              window_from_log)
from agent_core.watch.state import WatchState
from app.cli.statusline import main as statusline
from tests.agent_helpers import SECRET, user_dirs
from tests.fake_anthropic import FakeAnthropic, reply
from tests.headless_helpers import run_headless
from tests.log_helpers import assistant, usage, write_log

OPUS = "claude-opus-4-6"


@pytest.mark.parametrize("model", [OPUS, "claude-sonnet-4-6", "claude-sonnet-4-5-20250929"])
def test_an_opt_in_1m_model_is_200k_unless_it_is_on(model):
    """genai-prices lists claude-opus-4-6 at 1,000,000: that is the opt-in window, not the default."""
    assert model_limits(model).context_window == STANDARD_WINDOW
    assert model_limits(model, long_context=True).context_window == LONG_WINDOW
    assert model_limits(model + "[1m]").context_window == LONG_WINDOW
    assert model_limits(model, context_window=500_000, long_context=True).context_window == 500_000


def test_a_model_with_a_native_1m_window_keeps_it():
    assert model_limits("claude-sonnet-5-5").context_window == LONG_WINDOW
    assert not sends_long_context_beta("claude-sonnet-5-5", True)
    assert model_limits("claude-haiku-4-5").context_window == STANDARD_WINDOW


def test_the_beta_header_goes_only_with_the_setting_on_an_opt_in_model():
    assert sends_long_context_beta(OPUS, True) and not sends_long_context_beta(OPUS, False)


def test_the_loop_thresholds_follow_the_setting(tmp_path):
    env = {"ANTHROPIC_API_KEY": "sk-test", "CTXTUI_MODEL": OPUS, "HOME": str(tmp_path)}
    off = load_config(None, env, tmp_path)
    on = load_config(None, {**env, "CTXTUI_1M_CONTEXT": "1"}, tmp_path)
    assert off.resolved_context_window() == STANDARD_WINDOW and off.budget().autocompact_threshold < 200_000
    assert on.resolved_context_window() == LONG_WINDOW and on.long_context


def test_a_log_shows_the_1m_context_by_its_id_or_its_size():
    assert window_from_log(OPUS + "[1m]") and window_from_log(OPUS, 250_000)
    assert not window_from_log(OPUS, 199_000) and not window_from_log(None)


def _opus_log(tmp_path, contexts):
    recs = [assistant(f"m{i}", f"r{i}", model=OPUS, u=usage(inp=10, out=5, read=c), ts=f"2026-06-01T10:0{i}:00Z")
            for i, c in enumerate(contexts)]
    return write_log(tmp_path / "projects" / "-p" / "s.jsonl", recs)


def test_watch_takes_an_opus_4_6_log_at_200k(tmp_path):
    """A real Opus 4.6 session that auto-compacted near 170k showed "window 1,000,000 … 89% left" at 106k."""
    w = WatchState(_opus_log(tmp_path, [60_000, 106_000]))
    w.poll()
    assert w.budget.context_window == STANDARD_WINDOW
    assert w.context_event().percent_left < 40


def test_watch_moves_to_1m_when_a_request_held_more_than_200k(tmp_path):
    w = WatchState(_opus_log(tmp_path, [150_000, 250_000]))
    w.poll()
    assert w.budget.context_window == LONG_WINDOW


def test_statusline_takes_opus_4_6_at_200k_without_a_window_on_stdin(tmp_path):
    log = _opus_log(tmp_path, [106_000])
    data = {"session_id": "s", "transcript_path": str(log), "model": {"id": OPUS, "display_name": "Opus 4.6"}}
    out = io.StringIO()
    now = datetime(2026, 6, 1, 10, 5, tzinfo=timezone.utc).timestamp()
    statusline([], stdin=io.StringIO(json.dumps(data)), stdout=out, stderr=io.StringIO(),
               env={"CTXTUI_HOME": str(tmp_path / "home")}, now=now)
    assert "/200k" in out.getvalue(), out.getvalue()


def test_replay_and_usage_budget_share_the_rule():
    assert budget_for(OPUS).budget.context_window == STANDARD_WINDOW
    assert budget_for(OPUS, BudgetSettings(long_context=True)).budget.context_window == LONG_WINDOW


# ---- a live session through the SDK against the fake server -----------------------------------------

@pytest.mark.parametrize("on", [False, True])
def test_a_session_on_the_1m_context_sends_the_beta_and_budgets_1m(tmp_path, on):
    """Opus 4.6 live: 200k and no beta by default; with CTXTUI_1M_CONTEXT, 1M and the 1M beta header."""
    ws = tmp_path / "ws"
    ws.mkdir()
    with FakeAnthropic([reply("ok")]) as fake:
        env = {**user_dirs(), "ANTHROPIC_API_KEY": SECRET, "ANTHROPIC_BASE_URL": fake.base_url, "CTXTUI_MODEL": OPUS,
               **({"CTXTUI_1M_CONTEXT": "1"} if on else {})}
        code, out, err = run_headless(["-p", "hi", "--workspace", str(ws), "--output-format", "stream-json"], env)
        sent = [r for r in fake.requests if r.path == "/v1/messages"]
    assert code == 0, err
    context = next(json.loads(line) for line in out.splitlines() if json.loads(line)["type"] == "context")
    assert context["window"] == (LONG_WINDOW if on else STANDARD_WINDOW)
    betas = sent[0].headers.get("anthropic-beta", "")
    assert ("context-1m-2025-08-07" in betas) is on
