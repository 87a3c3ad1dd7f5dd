"""`--policy cc-reactive`: Claude Code 2.1.328 as it runs headless with default settings: nothing
compacts at the threshold; the request that overflows goes to the API, the API refuses it as too
long, and the one reactive compaction runs before the request is sent again (issue 49). Run through
the real agent against the fake server (tests/closed_loop_agent.py), beside `cc`, which compacts
at Claude Code's threshold."""
from __future__ import annotations

from compaction.layer_context import PipelineConfig
from compaction.presets import apply_preset

from tests.closed_loop_agent import history_problems, run_session
from tests.fake_anthropic import is_summary_request

WINDOW = 60_000          # cc-reactive: nothing compacts before the API refuses a request over 60,000
CC_WINDOW = 100_000      # cc's thresholds at Claude Code's smallest window: auto-compact 67,000, blocking 77,000


def _inputs(run) -> list[int]:
    return [sum(int(u.get(k) or 0) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
            for u in run.usages]


def _boundaries(run) -> list[str]:
    return [e.meta.get("trigger") for e in run.entries if e.kind == "compact_boundary"]


def test_cc_reactive_is_cc_without_the_threshold():
    cc, reactive = apply_preset(PipelineConfig(), "cc"), apply_preset(PipelineConfig(), "cc-reactive")
    assert cc.proactive and not reactive.proactive
    assert {k: v for k, v in vars(reactive).items() if k != "proactive"} == \
        {k: v for k, v in vars(cc).items() if k != "proactive"}


async def test_cc_reactive_compacts_only_after_the_api_refused_a_request(tmp_path):
    run = await run_session(tmp_path / "reactive", window=WINDOW, settings={"policy": "cc-reactive"})
    f = run.figures
    assert history_problems(run) == []
    assert f.errors == 0 and f.lost == 0 and f.answered + f.rereads == f.questions
    # the request went out past the proactive threshold and the blocking limit, and the API refused one
    assert max(_inputs(run)) > 53_100
    assert f.refused >= 1
    # every compaction was the reactive one, each after a refusal; none at the threshold
    assert _boundaries(run) and set(_boundaries(run)) == {"reactive"}
    assert f.summaries == len(_boundaries(run)) <= f.refused
    # the refused request was sent again after the summary: the summary request sits between two main ones
    kinds = ["summary" if is_summary_request(b) else "main" for b in run.bodies]
    first = kinds.index("summary")
    assert kinds[first - 1] == "main" and kinds[first + 1] == "main"


async def test_cc_compacts_at_claude_codes_threshold_and_is_never_refused(tmp_path):
    run = await run_session(tmp_path / "cc", window=CC_WINDOW, settings={"policy": "cc"}, files=40, questions=16)
    f = run.figures
    assert history_problems(run) == []
    assert f.errors == 0 and f.refused == 0 and f.lost == 0
    assert _boundaries(run) and set(_boundaries(run)) == {"auto"}
    assert 60_000 < max(_inputs(run)) < 77_000          # up to Claude Code's threshold, never past its blocking limit
