"""`ctxtui watch` on a ctxtui log: the context pane's category breakdown, as the TUI shows it.

The history is rebuilt from the logged records with the format's one reader
(`session_reader.SessionReplay`, fed the records watch_activity.py already decoded), and the
categories are `compaction.accounting.tokens.breakdown`'s over it with a `CategoryTally`, so an update costs
O(new entries); a compaction (a `history` record swapping the list) or an entry re-logged in
place sums the history again, once.

What the log does not hold is the system prompt and the tool definitions: their share is what
the logged count leaves over the messages' estimates, shown as one category ("overhead"); when
the estimates exceed the count, they are scaled down to it, as the TUI does.
"""
from __future__ import annotations

from typing import Any, Mapping

from compaction.accounting.budget import ContextBudget
from compaction.accounting.tokens import CategoryTally, breakdown

from agent_core.sessions.session_reader import SessionReplay


class HistoryBreakdown:
    """The working history of a ctxtui log as it grows, and its categories for a count."""

    def __init__(self) -> None:
        self.replay = SessionReplay()
        self.tally = CategoryTally()
        self.changed = False          # the history changed since the last `categories()`

    def feed(self, rec: Mapping[str, Any], lineno: int) -> None:
        """One decoded record; a broken one is skipped, as the session's own reader does."""
        t = rec.get("t")
        if t not in ("entry", "history", "meta"):
            return
        replay = self.replay
        n = len(replay.working)
        try:
            replay.feed(rec, lineno)
        except Exception:  # a well-formed line with a broken record: SessionReplay.feed_line's rule
            replay.skipped += 1
            return
        if t == "meta":
            return
        self.changed = True
        if t == "entry" and len(replay.working) == n:
            self.tally = CategoryTally()       # an entry re-logged in place: its figures changed

    @property
    def entries(self) -> int:
        return len(self.replay.working)

    def categories(self, budget: ContextBudget, tokens: int) -> dict[str, int]:
        """The breakdown of `tokens` (the logged count) over the history: message categories
        estimated, "overhead" (system prompt + tools) the rest, then free space and the buffer."""
        self.changed = False
        working = self.replay.history()
        messages = sum(self.tally.sums(working).values())
        cats = breakdown(working, system_tokens=max(0, tokens - messages), tools_tokens=0,
                         window=budget.context_window, threshold=budget.autocompact_threshold,
                         autocompact_enabled=budget.autocompact_enabled, tally=self.tally, total=tokens)
        cats["overhead"] = cats.pop("system")
        cats.pop("tools", None)
        return cats
