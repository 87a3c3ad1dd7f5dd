"""Formatting for display: numbers, dollars, durations. Presentation only, no accounting."""
from __future__ import annotations

import time
from pathlib import Path

from agent_core.security.visible_text import one_line as visible_line
from agent_core.security.visible_text import visible


def tokens(n: int | float | None) -> str:
    """12,345 — exact, with thousands separators (the panes show exact numbers)."""
    if n is None:
        return "—"
    return f"{int(n):,}"


def short_tokens(n: int | float | None) -> str:
    """12.3k / 1.2M for tight columns."""
    if n is None:
        return "—"
    n = int(n)
    if abs(n) >= 1_000_000:
        return f"{n / 1_000_000:.1f}M"
    if abs(n) >= 10_000:
        return f"{n / 1_000:.0f}k"
    if abs(n) >= 1_000:
        return f"{n / 1_000:.1f}k"
    return str(n)


def usd(x: float | None) -> str:
    """Dollars; unknown prices show as "?" rather than a wrong zero."""
    if x is None:
        return "?"
    if x == 0:
        return "$0"
    if abs(x) < 0.01:
        return f"${x:.4f}"
    return f"${x:,.2f}"


def signed_usd(x: float | None) -> str:
    """Dollars with the sign in front ("-$0.0111"): a compaction whose rewrite pays at once costs
    less than nothing on the next call."""
    if x is None:
        return "?"
    return "-" + usd(-x) if x < 0 else usd(x)


def cache_clause(cache: dict | None) -> str:
    """What a compaction's rewrite of the cached prefix cost and should save, in a few words
    ("cache $0.039, saves $0.0005/call"); "" when the layer said nothing about the cache."""
    if not isinstance(cache, dict):
        return ""
    cost, saves = cache.get("cost_usd"), cache.get("saves_per_call_usd")
    parts = []
    if isinstance(cost, (int, float)) and not isinstance(cost, bool):
        parts.append(f"cache {signed_usd(float(cost))}")
    if isinstance(saves, (int, float)) and not isinstance(saves, bool) and saves > 0:
        parts.append(f"saves {usd(float(saves))}/call")
    return ", ".join(parts)


def percent(x: float | None, digits: int = 0) -> str:
    if x is None:
        return "—"
    return f"{x:.{digits}f}%"


def duration(s: float | None) -> str:
    if s is None:
        return "—"
    if s < 1:
        return f"{s * 1000:.0f}ms"
    if s < 60:
        return f"{s:.1f}s"
    return f"{int(s // 60)}m{int(s % 60):02d}s"


def clock(t: float | None) -> str:
    """Local HH:MM:SS, or — when unknown."""
    if t is None:
        return "—"
    return time.strftime("%H:%M:%S", time.localtime(t))


def date_time(t: float) -> str:
    """Local YYYY-MM-DD HH:MM (a file's or a session's last change)."""
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(t))


def size(n: int) -> str:
    """Bytes as B/KB/MB."""
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n / (1024 * 1024):.1f} MB"


def one_line(s: str, width: int) -> str:
    """First line, trimmed to width with an ellipsis. Control characters are shown, not obeyed
    (agent_core.security.visible_text): a carriage return reads ␍ rather than becoming a space."""
    s = " ".join(visible(s).split())
    return s if len(s) <= width else s[: max(0, width - 1)] + "…"


def path(p: str | Path | None) -> str:
    """A path as a person reads it: ~ for the home folder. On one line, every control character
    in a file or folder name shown (a name is someone else's bytes)."""
    if p is None:
        return "—"
    try:
        return visible_line("~/" + str(Path(p).relative_to(Path.home())))
    except ValueError:
        return visible_line(str(p))
