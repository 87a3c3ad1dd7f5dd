"""`ctxtui watch` without a screen: what a session log's records mean for the panes.

`WatchState.poll()` reads only the bytes appended to a session log (and to its sub-agent logs)
since the last poll, through `agent_core.logs.LogReader`, and turns the new records into the loop's
own events: a `ContextUpdate` (thresholds from `compaction.accounting.budget.ContextBudget` for the log's
model, as the loop computes them), a `CostUpdate` (model x bucket, with dollars) and one
`CompactionView` per compaction (new, or completed once Claude Code's next response tells the
tokens after it). The Textual screen (app/watch/screen.py) only hands these to the widgets, so
everything here is tested without a screen.

Which log to follow is watch_target.py; waiting for the files to change is watch_files.py.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from compaction.accounting.budget import ContextBudget
from compaction.accounting.cache_doctor import CacheMiss

from agent_core.context_budget import BudgetInfo, BudgetSettings, budget_for
from agent_core.events import context_update
from agent_core.events import ContextUpdate, CostUpdate
from agent_core.pricing.pricer import Pricer
from agent_core.providers.models_info import STANDARD_WINDOW, window_from_log
from agent_core.pricing.tally import CostTally, burn_rate
from agent_core.logs import CompactionRecord, Deduper, LogReader, UsageRecord
from agent_core.logs.discover import read_head, subagent_logs
from agent_core.watch.activity import ActivityItem, ActivityReader
from agent_core.watch.breakdown import HistoryBreakdown
from agent_core.watch.cache_check import UsageDoctor

HISTORY_POINTS = 512   # context points kept for the plot (it shows the latest that fit)
META_PEEK = 1 << 18    # ctxtui's meta line is the first one; never read more than this for it
FEED_ITEMS = 200       # tool calls kept for the activity feed (it shows the latest that fit)

SOURCE_NAMES = {"claude_code": "Claude Code log", "ctxtui": "ctxtui session log"}


# ------------------------------------------------------------------ compactions

@dataclass(frozen=True)
class CompactionView:
    """One compaction as the timeline shows it. `tokens_after` is None until known (Claude Code
    logs it only with the next response); `new` is False when this completes a row already shown."""
    key: str
    layer: str
    trigger: str
    tokens_before: int | None
    tokens_after: int | None
    timestamp: float | None
    is_sidechain: bool = False
    new: bool = True

    @classmethod
    def of(cls, rec: CompactionRecord, new: bool) -> "CompactionView":
        layer = "sub-agent" if rec.is_sidechain else rec.layer
        return cls(rec.key, layer, rec.trigger, rec.tokens_before, rec.tokens_after, rec.timestamp,
                   rec.is_sidechain, new)


# ------------------------------------------------------------------ the state

@dataclass
class WatchUpdate:
    """What one poll changed: each field is None / empty when that part did not change."""
    records: int = 0
    context: ContextUpdate | None = None
    cost: CostUpdate | None = None
    compactions: list[CompactionView] = field(default_factory=list)
    activity: list[ActivityItem] = field(default_factory=list)   # prompts and tool calls, in log order
    cache_misses: list[CacheMiss] = field(default_factory=list)  # requests that read short of the cache
    header_changed: bool = False
    reset: bool = False       # the log was replaced or rewritten: everything was re-read from its start

    @property
    def changed(self) -> bool:
        return bool(self.context or self.cost or self.compactions or self.activity or self.cache_misses
                    or self.header_changed or self.reset)


class WatchState:
    """The watched session: context, cost and compactions so far. Call `poll()` from one thread
    at a time (the screen loads a big log in a thread, then polls on each file change)."""

    def __init__(self, path: str | Path, *, context_window: int | None = None, pricer: Pricer | None = None) -> None:
        self.path = Path(path)
        self.context_window = context_window
        self._start(CostTally(pricer=pricer or Pricer()))

    def _start(self, cost: CostTally) -> None:
        """Nothing read yet: at the start, and again when a log was replaced or rewritten."""
        self.dedup = Deduper()
        self.readers: dict[Path, LogReader] = {}
        self._reader(self.path)
        self.meta: dict[str, Any] = {}
        self._meta_read = False
        self.model: str | None = None
        self._budgets: dict[tuple[str | None, bool], BudgetInfo] = {}
        self.largest_context = 0          # the most any request held: above 200k, the 1M context was on
        self.info = self._budget_info(None)
        self.session_id: str | None = None
        self.tokens: int | None = None
        self.last_buckets: dict[str, int] | None = None     # None after a compaction: an estimate
        self.last_output: int | None = None                 # the last main response's output tokens
        self.turns = 0
        self.history: deque[tuple[int, int, bool]] = deque(maxlen=HISTORY_POINTS)
        self.compactions: dict[str, CompactionView] = {}
        self.cost = cost
        self.records = 0
        self.responses = 0
        self.first_ts: float | None = None
        self.last_ts: float | None = None
        self._mark_next = False
        self._last_key: str | None = None
        self.history_breakdown = HistoryBreakdown()          # ctxtui logs: the TUI's categories
        self.activity = ActivityReader(self.path, on_record=self.history_breakdown.feed)
        self.last_prompt: ActivityItem | None = None
        self.tool_calls: deque[ActivityItem] = deque(maxlen=FEED_ITEMS)   # since the last prompt
        self.tool_count = 0                                  # tool calls since the last prompt
        self.cache_doctor = UsageDoctor()
        self.cache_misses: deque[CacheMiss] = deque(maxlen=FEED_ITEMS)   # the latest, for the feed
        self.cache_miss_count = 0
        self._new_misses: list[CacheMiss] = []

    # -- files
    def _reader(self, path: Path) -> LogReader:
        r = self.readers.get(path)
        if r is None:
            r = self.readers[path] = LogReader(path, dedup=self.dedup)
        return r

    @property
    def main_reader(self) -> LogReader:
        return self.readers[self.path]

    @property
    def format(self) -> str | None:
        return self.main_reader.format

    @property
    def source_name(self) -> str:
        return SOURCE_NAMES.get(self.format or "", "session log")

    @property
    def skipped(self) -> int:
        """Corrupt or cut-off lines skipped so far, over the log and its sub-agent logs."""
        return sum(r.skipped for r in self.readers.values())

    @property
    def first_corrupt_line(self) -> int | None:
        return self.main_reader.stats.first_corrupt_line

    @property
    def subagent_logs(self) -> int:
        return len(self.readers) - 1

    def _discover(self) -> None:
        """Sub-agent logs of this session (`<stem>/subagents/*.jsonl`): followed as they appear.
        Only that folder is listed (one scandir per poll), never the whole session folder."""
        for p in subagent_logs(self.path):
            self._reader(p)

    # -- thresholds
    def _budget_info(self, model: str | None) -> BudgetInfo:
        """The thresholds for `model`: its window by the one window rule (models_info), on the 1M
        context when the logged settings, a `[1m]` model id or a request above 200k say so."""
        long = window_from_log(model, self.largest_context)
        info = self._budgets.get((model, long))
        if info is None:
            settings = BudgetSettings.from_logged(self.meta.get("config") if self.meta else None,
                                                  context_window=self.context_window)
            if long and not settings.long_context:
                settings = replace(settings, long_context=True)
            info = self._budgets[(model, long)] = budget_for(model, settings)
        return info

    @property
    def budget(self) -> ContextBudget:
        return self.info.budget

    # -- reading
    def poll(self) -> WatchUpdate:
        """Read what was appended since the last poll and apply it. A log replaced (a new file
        renamed over it), truncated or rewritten in place invalidates what was counted from it:
        then everything is counted again from the start, and the update says `reset`."""
        resets = self._resets()
        up = self._poll()
        if self._resets() != resets:
            self._start(CostTally(pricer=self.cost.price))
            up = self._poll()
            up.reset = True
        return up

    def _resets(self) -> int:
        return sum(r.follower.resets for r in self.readers.values()) + self.activity.resets

    def _poll(self) -> WatchUpdate:
        self._discover()
        up = WatchUpdate()
        context_changed = False
        cost_changed = False
        skipped = self.skipped
        for reader in list(self.readers.values()):
            for rec in reader.records():
                up.records += 1
                if isinstance(rec, UsageRecord):
                    cost_changed = True
                    context_changed |= self._usage(rec)
                else:
                    context_changed |= self._compaction(rec, up)
            if reader is self.main_reader and not self._meta_read and reader.format == "ctxtui":
                self._meta_read = True
                self.meta = read_head(self.path, META_PEEK).meta
                if self.meta:
                    self._budgets.clear()
                    if self.model is None and isinstance(self.meta.get("model"), str):
                        self.model = self.meta["model"]
                    self.info = self._budget_info(self.model)
                    up.header_changed = context_changed = True
        self.records += up.records
        up.activity = self._activity()
        up.cache_misses, self._new_misses = self._new_misses, []
        if self.history_breakdown.changed and self.tokens is not None:
            context_changed = True
        if context_changed:
            up.context = self.context_event()
        if cost_changed:
            up.cost = self.cost.event()
        up.header_changed |= bool(up.records) or self.skipped != skipped
        return up

    def _activity(self) -> list[ActivityItem]:
        items = self.activity.read()
        for item in items:
            if item.kind == "prompt":
                self.last_prompt = item
                self.tool_calls.clear()
                self.tool_count = 0
            else:
                self.tool_calls.append(item)
                self.tool_count += 1
        return items

    def _seen(self, ts: float | None) -> None:
        if ts is not None:
            self.first_ts = ts if self.first_ts is None else min(self.first_ts, ts)
            self.last_ts = ts if self.last_ts is None else max(self.last_ts, ts)

    def _usage(self, rec: UsageRecord) -> bool:
        if rec.replaces is not None:      # a sub-agent copy counted earlier: this main copy replaces it
            old = rec.replaces
            self.cost.add_buckets(old.model, old.buckets, old.purpose, sign=-1, when=old.timestamp)
        self.cost.add_buckets(rec.model, rec.buckets, rec.purpose, when=rec.timestamp)
        self._seen(rec.timestamp)
        self.responses += 1 if rec.replaces is None else 0
        if rec.purpose != "main" or rec.is_sidechain:
            return False
        self.session_id = rec.session_id
        self.tokens = self._context_of(rec)
        grew = self.tokens > self.largest_context
        self.largest_context = max(self.largest_context, self.tokens)
        if rec.model != self.model or (grew and self.tokens > STANDARD_WINDOW):
            self.model = rec.model
            self.info = self._budget_info(rec.model)
        self.last_buckets = dict(rec.buckets)
        self.last_output = rec.buckets.get("output", 0)
        old = rec.replaces
        if old is not None and not old.is_sidechain and self.history and self._last_key == rec.request_key:
            # a later copy of the response just counted (its final usage): the same turn, updated
            self.history[-1] = (self.turns, self.tokens, self.history[-1][2])
            return True
        self.turns += 1
        self._last_key = rec.request_key
        miss = self.cache_doctor.check(self.turns, rec)
        if miss is not None:
            self.cache_misses.append(miss)
            self.cache_miss_count += 1
            self._new_misses.append(miss)
        self.history.append((self.turns, self.tokens, self._mark_next))
        self._mark_next = False
        return True

    def _context_of(self, rec: UsageRecord) -> int:
        """The context figure of a response. Claude Code shows what the request held: input +
        cache read + cache write, the answer's output apart. ctxtui's loop counts the output too
        (the next request holds it), so a ctxtui log keeps the figure its TUI showed."""
        if rec.source == "ctxtui":
            return rec.context_tokens
        b = rec.buckets
        return b.get("input", 0) + b.get("cache_read", 0) + b.get("cache_write_5m", 0) + b.get("cache_write_1h", 0)

    def _compaction(self, rec: CompactionRecord, up: WatchUpdate) -> bool:
        old = self.compactions.get(rec.key)
        new = old is None
        view = CompactionView.of(rec, new)
        if old is not None and replace(old, new=False) == view:
            return False                      # the same record again: nothing to show
        self.compactions[rec.key] = view
        up.compactions.append(view)
        self._seen(rec.timestamp)
        if rec.is_sidechain or not new:
            return False
        self.cache_doctor.rewritten = True
        if rec.tokens_after is not None:      # ctxtui logs the count after each compaction
            self.tokens = rec.tokens_after
            self.last_buckets = None
            self.history.append((self.turns, rec.tokens_after, True))
            return True
        self._mark_next = True                # Claude Code: the next response's context is the count after
        return False

    # -- views
    def context_event(self) -> ContextUpdate | None:
        """The context numbers now, as the loop's `Agent.context_event` would give them. A ctxtui
        log's categories are the TUI's (by kind of message, from its logged history); a Claude
        Code log's, what its last response's usage tells (by token bucket)."""
        if self.tokens is None:
            return None
        b = self.budget
        t = self.tokens
        source = "usage" if self.last_buckets is not None else "estimate"
        if self.format == "ctxtui" and self.history_breakdown.entries:
            return context_update(b, t, self.history_breakdown.categories(b, t), source)
        cats: dict[str, int] = {}
        if self.last_buckets is not None:
            lb = self.last_buckets
            cats = {"cache_read": lb.get("cache_read", 0),
                    "cache_write": lb.get("cache_write_5m", 0) + lb.get("cache_write_1h", 0),
                    "input": lb.get("input", 0)}
            if self.format == "ctxtui":          # its figure holds the output: the parts add up to it
                cats["output"] = lb.get("output", 0)
        else:
            cats = {"estimated": t}
        cats["free"] = max(0, b.autocompact_threshold - t)
        cats["autocompact_buffer"] = b.context_window - b.autocompact_threshold
        return context_update(b, t, cats, source)

    def history_points(self) -> tuple[tuple[int, int, bool], ...]:
        return tuple(self.history)

    def cost_extras(self) -> dict[str, Any]:
        """Figures the cost pane shows besides the event: cache hit rate, what caching saved, and
        the burn rate over the log's own time span (from its timestamps, not the wall clock)."""
        out: dict[str, Any] = {}
        if any(self.cost.tokens().values()):
            out["cache_hit_rate"] = self.cost.cache_hit_rate()
            saved = self.cost.saved_by_cache_usd()
            if saved is not None:
                out["saved_usd"] = saved
        burn = burn_rate(self.cost.total_usd, self.first_ts, self.last_ts)
        if burn is not None:
            out["burn_usd_per_hour"] = burn
        return out
