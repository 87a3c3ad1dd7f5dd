"""The next request's price as the context pane and the status line show it, from a
`compaction.next_request.NextRequest` the app hands down (already counted down and with the prompt
being typed added): cached and new tokens, dollars if the cache is warm and if it is cold, and the
cache's time left."""
from __future__ import annotations

import math
from typing import Any

from textual.content import Content

from compaction.next_request import KEYS, NextRequest

from app import format as fmt


def from_event(d: Any) -> NextRequest | None:
    """A ContextUpdate's `next_request` dict as a NextRequest; None when absent or malformed (a
    figure from a log in `watch` has none)."""
    if not isinstance(d, dict) or set(d) != set(KEYS):
        return None
    ints = [d[k] for k in KEYS[:3]]
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in ints):
        return None
    rest = [d[k] for k in KEYS[3:]]
    if not all(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0)
               for v in rest):
        return None
    return NextRequest(*ints, *(None if v is None else float(v) for v in rest))


def time_left(nr: NextRequest) -> str:
    """The cache's time left as m:ss, rounded up (a cache with 0.4 s left is not cold yet)."""
    s = nr.cache_expires_in_s
    if s is None:
        return "—"
    whole = math.ceil(s)
    return f"{whole // 60}:{whole % 60:02d}"


def cache_words(nr: NextRequest) -> tuple[str, str]:
    """(what the cache is now, its style): its time left, cold, or nothing cached yet."""
    if nr.cache_expires_in_s is None or nr.cached_tokens == 0:
        return "nothing cached yet", "$foreground-muted"
    if nr.cache_expires_in_s <= 0:
        return "cache cold", "bold $warning"
    return f"cache {time_left(nr)} left", "bold $success"


def pane_text(nr: NextRequest | None) -> Content:
    """Two lines for the context pane (empty when there is no figure)."""
    if nr is None:
        return Content("")
    words, style = cache_words(nr)
    warm_style = "bold" if nr.cache_expires_in_s else "dim"
    return Content.assemble(
        ("Next ", "bold"), (fmt.short_tokens(nr.cached_tokens), "bold"), " cached · ",
        (fmt.short_tokens(nr.uncached_tokens), "bold"), " new · ", (words, style), "\n",
        (fmt.usd(nr.usd_if_warm), warm_style), " if warm · ", (fmt.usd(nr.usd_if_cold), "bold"), " if cold")


def status_forms(nr: NextRequest | None) -> list[Content | None]:
    """The status line's part, fullest form first, dropped last."""
    if nr is None:
        return [None]
    words, style = cache_words(nr)
    if nr.cache_expires_in_s is not None and nr.cache_expires_in_s > 0 and nr.cached_tokens:
        short = (time_left(nr), style)
        price = fmt.usd(nr.usd_if_warm)
    else:
        short = ("cold" if nr.cache_expires_in_s is not None else "new", style)
        price = fmt.usd(nr.usd_if_cold)
    return [Content.assemble(("next ", "dim"), (fmt.usd(nr.usd_if_warm), "bold"), " warm / ",
                             (fmt.usd(nr.usd_if_cold), "bold"), " cold · ", (words, style)),
            Content.assemble(("next ", "dim"), (price, "bold"), " ", short),
            None]
