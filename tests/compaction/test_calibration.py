"""Issue 24: the calibration (server tokens per estimated token) scales what layers add and remove,
never the server's own usage, and counts answers at their own rate."""
from __future__ import annotations

from compaction import count_tokens
from compaction.accounting.tokens import Calibration
from tests.compaction.collapse_helpers import session
from tests.compaction.count_helpers import answered


def test_the_calibration_scales_estimates_never_the_usage():
    es = session(3, usage=None)
    plain = count_tokens(es, 1_000)
    assert count_tokens(es, 1_000, 1.5) == 1_000 + round(1.5 * (plain - 1_000))
    history = es + answered(es, 0)
    anchor = history[-2]
    real = anchor.usage["input_tokens"] + anchor.usage["output_tokens"]
    shifted = history[:-2] + [anchor.with_meta(usage_adjust=-200, real_adjust=30), history[-1]]
    assert count_tokens(shifted, 1_000, 1.5) == real + 30 + round(1.5 * (history[-1].tokens - 200))


def test_answers_are_counted_at_their_own_rate():
    es = session(3, usage=None)
    answers = sum(e.tokens for e in es if e.role == "assistant")
    others = sum(e.tokens for e in es if e.role != "assistant")
    assert count_tokens(es, 100, Calibration(1.2, 0.6)) == 100 + round(1.2 * others + 0.6 * answers)
    assert count_tokens(es, 100, Calibration(1.2, 1.2)) == count_tokens(es, 100, 1.2)
