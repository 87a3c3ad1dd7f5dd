"""Thresholds and states (the formulas: docs/engine.md, "Thresholds").

By default CC's buffers are kept for windows of 200,000 and up; for smaller windows each one
shrinks to the same share of the window, so the order of the thresholds holds for every window
size. A buffer set on the budget (the `cc` presets set Claude Code's own: compaction/presets.py) is
that many tokens at every window, as long as the set buffers fit the window (`buffers_fit`); in a
window too small for them the defaults apply.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

STATES = ("ok", "warning", "error", "autocompact", "blocking")
REFERENCE_WINDOW = 200_000
MIN_WINDOW = 1_000

# name: (default tokens, share of window used instead when smaller)
DEFAULTS = {
    "output_reserve": (20_000, 0.10),
    "autocompact_buffer": (13_000, 0.065),
    "warning_buffer": (20_000, 0.10),
    "error_buffer": (10_000, 0.05),
    "blocking_buffer": (3_000, 0.015),
    # A threshold the user sets stays this far under the blocking limit, so the summary that runs at
    # it, and the turn that reached it, still have room before the API refuses a request.
    "threshold_margin": (2_000, 0.01),
}


def _scaled(name: str, window: int, override: int | None) -> int:
    if override is not None:
        if override < 0:
            raise ValueError(f"{name} must be a whole number >= 0, got {override}")
        return override
    default, share = DEFAULTS[name]
    return int(min(default, share * window))


@dataclass(frozen=True)
class ContextBudget:
    context_window: int = REFERENCE_WINDOW
    max_output_tokens: int = 32_000
    autocompact_enabled: bool = True
    autocompact_pct: float | None = None
    output_reserve: int | None = None
    autocompact_buffer: int | None = None
    warning_buffer: int | None = None
    error_buffer: int | None = None
    blocking_buffer: int | None = None
    buffers_min_window: int = 0          # the buffers set here apply from this window up (the defaults below it)

    def __post_init__(self) -> None:
        for name in DEFAULTS:
            v = getattr(self, name, None)
            if v is not None and (not isinstance(v, int) or v < 0):
                raise ValueError(f"{name} must be a whole number >= 0, got {v!r}")
        if not isinstance(self.context_window, int) or self.context_window < MIN_WINDOW:
            raise ValueError(f"context_window must be a whole number >= {MIN_WINDOW}, got {self.context_window!r}")
        if not isinstance(self.max_output_tokens, int) or self.max_output_tokens < 1:
            raise ValueError(f"max_output_tokens must be a whole number >= 1, got {self.max_output_tokens!r}")
        if self.autocompact_pct is not None and not (0 < self.autocompact_pct <= 100):
            raise ValueError(f"autocompact_pct must be a number in (0, 100], got {self.autocompact_pct!r}")
        if self.effective_window <= 0:
            raise ValueError("output_reserve leaves no room: it must be smaller than the context window")
        if self.autocompact_pct is not None and self.autocompact_enabled:
            wanted, highest = self.autocompact_threshold, self.highest_threshold
            if wanted > highest:
                raise ValueError(
                    f"autocompact_pct {self.autocompact_pct:g}% puts the auto-compact threshold at {wanted:,} tokens, "
                    f"above the highest safe one ({highest:,}: the blocking limit {self.blocking_limit:,} less a "
                    f"{self.blocking_limit - highest:,}-token margin); with this window it can be at most "
                    f"{self.highest_pct:g}%")
        if self.warning_threshold <= 0:
            raise ValueError("the buffers leave no room below the auto-compact threshold; make them smaller")

    @property
    def buffers_fit(self) -> bool:
        """The buffers set on this budget leave room in its window: a positive warning and error
        mark under the default threshold, and the blocking limit above it. When they do not (Claude
        Code's fixed figures in a window under about 55,000 tokens), or the window is under
        `buffers_min_window` (Claude Code accepts none under 100,000), every buffer is the default."""
        w = self.context_window
        if w < self.buffers_min_window:
            return False

        def given(name: str) -> int:
            return _scaled(name, w, getattr(self, name))
        threshold = w - min(self.max_output_tokens, given("output_reserve")) - given("autocompact_buffer")
        return (threshold - max(given("warning_buffer"), given("error_buffer")) > 0
                and given("blocking_buffer") < given("autocompact_buffer"))

    def _buffer(self, name: str) -> int:
        """A buffer in tokens: the one set on the budget (when the set ones fit), else the default."""
        override = getattr(self, name, None)
        if override is not None and not self.buffers_fit:
            override = None
        return _scaled(name, self.context_window, override)

    @property
    def reserve(self) -> int:
        """The room kept for an answer: the output reserve, at most the model's max output."""
        return min(self.max_output_tokens, self._buffer("output_reserve"))

    @property
    def effective_window(self) -> int:
        return self.context_window - self.reserve

    @property
    def autocompact_threshold(self) -> int:
        e = self.effective_window
        if not self.autocompact_enabled:
            return e
        if self.autocompact_pct is not None:     # the user's: above the default or below it
            return int(e * self.autocompact_pct / 100 + 1e-6)   # a pct made from a token count gives that count
        return self.default_threshold

    @property
    def default_threshold(self) -> int:
        """The threshold when the user sets none (Claude Code's buffer, scaled to the window)."""
        return self.effective_window - self._buffer("autocompact_buffer")

    @property
    def highest_threshold(self) -> int:
        """The highest threshold a user may set: the blocking limit less a margin."""
        return self.blocking_limit - self._buffer("threshold_margin")

    @property
    def highest_pct(self) -> float:
        """`highest_threshold` as a percentage of the effective window, rounded down to a tenth."""
        return math.floor(1000 * self.highest_threshold / self.effective_window) / 10

    def pct_for(self, tokens: int) -> float:
        """The autocompact_pct that puts the threshold at `tokens`."""
        return 100 * tokens / self.effective_window

    def _below_threshold(self, name: str) -> int:
        """A warning/error buffer: scaled to the window, and never a larger share of the threshold
        than the default is of the default threshold (20,000 of 167,000), so a low
        autocompact_pct (say 10%) moves the warning and error marks down with it. A buffer set on
        the budget is used as it is, unless a user's autocompact_pct moves the threshold."""
        t = self.autocompact_threshold
        buffer = self._buffer(name)
        if getattr(self, name) is None or not self.buffers_fit or self.autocompact_pct is not None:
            default_t = REFERENCE_WINDOW - DEFAULTS["output_reserve"][0] - DEFAULTS["autocompact_buffer"][0]
            buffer = min(buffer, t * DEFAULTS[name][0] // default_t)
        return buffer

    @property
    def warning_threshold(self) -> int:
        return self.autocompact_threshold - self._below_threshold("warning_buffer")

    @property
    def error_threshold(self) -> int:
        return self.autocompact_threshold - self._below_threshold("error_buffer")

    @property
    def blocking_limit(self) -> int:
        return self.effective_window - self._buffer("blocking_buffer")

    def percent_left(self, tokens: int) -> float:
        """Percent of the way left until auto-compact (0–100, floored at 0)."""
        t = self.autocompact_threshold
        return max(0.0, (t - tokens) / t * 100.0)

    def state(self, tokens: int) -> str:
        if tokens >= self.blocking_limit:
            return "blocking"
        if self.autocompact_enabled and tokens >= self.autocompact_threshold:
            return "autocompact"
        if tokens >= self.error_threshold:
            return "error"
        if tokens >= self.warning_threshold:
            return "warning"
        return "ok"
