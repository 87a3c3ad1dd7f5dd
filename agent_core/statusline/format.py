"""The one line `ctxtui statusline` prints, from figures computed elsewhere.

Plain text (Claude Code shows the first line of stdout): short enough for a narrow terminal, and
every figure that is unknown is left out rather than shown as zero. The model's name comes from
Claude Code's stdin or a log: the line passes through `one_line`, so an escape sequence in it is
shown, never obeyed by the terminal that draws Claude Code's screen.
"""
from __future__ import annotations

from collections import namedtuple

from agent_core.security.visible_text import one_line

SEP = " · "


class StatusFigures(namedtuple("StatusFigures", "model context window threshold session_usd session_unpriced today_usd "
                               "block_left_s block_usd block_usd_per_h cache_left_s note",
                               defaults=(None, None, None, None, None, False, None, None, None, None, None, None))):
    """Every figure of the line; None where unknown. A named tuple, not a dataclass: this runs on
    every refresh of Claude Code's prompt, and dataclasses costs 10 ms to import."""
    __slots__ = ()
    model: str | None
    context: int | None              # input + cache read + cache write of the last main request
    window: int | None
    threshold: int | None            # auto-compact threshold
    session_usd: float | None
    session_unpriced: bool           # some responses are of a model without prices
    today_usd: float | None
    block_left_s: float | None       # None: no active 5-hour block
    block_usd: float | None          # the active block's dollars so far
    block_usd_per_h: float | None    # ... since its first activity (the burn rate)
    cache_left_s: float | None       # the prompt cache's time left (0: gone cold); None: unknown
    note: str | None                 # why a figure is missing ("no transcript yet")


def tokens(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f}M".replace(".0M", "M")
    if n >= 1_000:
        return f"{n / 1_000:.1f}k".replace(".0k", "k")
    return str(n)


def dollars(x: float) -> str:
    return f"${x:,.2f}" if abs(x) >= 0.005 or x == 0 else "<$0.01"


def duration(seconds: float) -> str:
    m = int(seconds // 60)
    return f"{m // 60}h{m % 60:02d}m" if m >= 60 else f"{m}m"


def percent_left(tokens_used: int, threshold: int) -> float:
    """As ContextBudget.percent_left: the share of the way left until auto-compact, floored at 0."""
    return max(0.0, (threshold - tokens_used) / threshold * 100.0) if threshold > 0 else 0.0


def format_line(f: StatusFigures) -> str:
    parts: list[str] = []
    if f.model:
        parts.append(f.model)
    if f.context is not None:
        ctx = f"ctx {tokens(f.context)}"
        if f.window:
            ctx += f"/{tokens(f.window)}"
        if f.threshold:
            ctx += f" ({percent_left(f.context, f.threshold):.0f}% left to auto-compact)"
        parts.append(ctx)
    if f.session_usd is not None:
        parts.append(f"session {dollars(f.session_usd)}{'+?' if f.session_unpriced else ''}")
    if f.today_usd is not None:
        parts.append(f"today {dollars(f.today_usd)}")
    if f.block_left_s is not None:
        block = f"block {duration(f.block_left_s)} left"
        if f.block_usd is not None:
            block += f" {dollars(f.block_usd)}"
            if f.block_usd_per_h is not None:
                block += f" ({dollars(f.block_usd_per_h)}/h)"
        parts.append(block)
    if f.cache_left_s is not None:
        parts.append(f"cache warm {duration(f.cache_left_s)} left" if f.cache_left_s >= 60
                     else "cache warm <1m left" if f.cache_left_s > 0 else "cache cold")
    if f.note:
        parts.append(f.note)
    return one_line(SEP.join(parts)) if parts else "ctxtui"
