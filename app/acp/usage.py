"""The `usage_update` session update: the context pane's figures for an editor.

`used` and `size` are the context now and the window (the loop's own count, what the gauge
shows), `cost` the session's dollars so far. What only ctxtui knows goes in `_meta.ctxtui`: the
auto-compact threshold and state, and every compaction since the last update (layer, trigger,
tokens before and after, what it cost), so an editor can show a compaction when it lands.
"""
from __future__ import annotations

from typing import Any, Callable

from acp.schema import Cost, UsageUpdate

from agent_core import events as ev

META_KEY = "ctxtui"


def compaction_meta(c: ev.Compaction, price: Callable[[dict], float | None]) -> dict[str, Any]:
    """One compaction for `_meta`: `costUsd` is what its summary call cost (0 for a layer that
    calls no model, null when the price is unknown); `cacheRewriteUsd` what rewriting the cached
    prefix costs the next call, when the engine worked it out."""
    cache = c.cache or {}
    return {"layer": c.layer, "trigger": c.trigger, "tokensBefore": c.tokens_before, "tokensAfter": c.tokens_after,
            "costUsd": price(c.usage) if c.usage else 0.0, "cacheRewriteUsd": cache.get("cost_usd"),
            "savesPerCallUsd": cache.get("saves_per_call_usd"), "durationS": c.duration_s, "action": c.action,
            "transcriptPath": c.transcript_path}


class UsageReporter:
    """Turns the loop's context figures into usage updates. The loop says a fresh figure after
    every model call and every compaction; an update that would repeat the last one (same figures,
    no compaction since) is not sent again."""

    def __init__(self, total_usd: Callable[[], float | None], price: Callable[[dict], float | None]) -> None:
        self._total_usd = total_usd
        self._price = price
        self._compactions: list[dict[str, Any]] = []
        self._last: tuple | None = None
        self._context: ev.ContextUpdate | None = None

    def compaction(self, c: ev.Compaction) -> None:
        """Kept for the next update (the loop says the new figure right after)."""
        self._compactions.append(compaction_meta(c, self._price))

    def update(self, c: ev.ContextUpdate | None = None, *, force: bool = False) -> UsageUpdate | None:
        """The update for figure `c` (None: the last one again, say at a turn's end), or None when
        nothing changed."""
        c = c or self._context
        if c is None:
            return None
        self._context = c
        total = self._total_usd()
        key = (c.tokens, c.window, total, c.state)
        if key == self._last and not self._compactions and not force:
            return None
        self._last = key
        meta: dict[str, Any] = {"threshold": c.threshold, "state": c.state, "percentLeft": c.percent_left,
                                "source": c.source}
        if self._compactions:
            meta["compactions"], self._compactions = self._compactions, []
        return UsageUpdate(session_update="usage_update", used=max(0, c.tokens), size=max(0, c.window),
                           cost=None if total is None else Cost(amount=round(total, 6), currency="USD"),
                           field_meta={META_KEY: meta})
