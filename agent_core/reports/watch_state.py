"""`ctxtui watch` without a screen: what a session log's records mean for the panes.

`WatchState.poll()` reads only the bytes appended to a session log (and to its sub-agent logs)
since the last poll, through `agent_core.logs.LogReader`, and turns the new records into the loop's
own events: a `ContextUpdate` (thresholds from `compaction.budget.ContextBudget` for the log's
model, as the loop computes them), a `CostUpdate` (model x bucket, with dollars) and one
`CompactionView` per compaction (new, or completed once Claude Code's next response tells the
tokens after it). The Textual screen (app/watch_app.py) only hands these to the widgets, so
everything here is tested without a screen.

Which log to follow is watch_target.py; waiting for the files to change is watch_files.py.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping

from compaction.budget import ContextBudget

from agent_core.pricing.cost import BUCKETS, shown_price
from agent_core.context_budget import BudgetInfo, BudgetSettings, budget_for, context_update
from agent_core.events import Compaction, ContextUpdate, CostUpdate
from agent_core.logs import CompactionRecord, Deduper, LogReader, UsageRecord
from agent_core.logs.discover import read_head, subagent_logs
from agent_core.reports.usage_report import Pricer

HISTORY_POINTS = 512   # context points kept for the plot (it shows the latest that fit)
RATE_PROBE = 1_000     # tokens priced once per model and bucket to learn its base rate
META_PEEK = 1 << 18    # ctxtui's meta line is the first one; never read more than this for it

SOURCE_NAMES = {"claude_code": "Claude Code log", "ctxtui": "ctxtui session log"}


# ------------------------------------------------------------------ cost

@dataclass
class CostRow:
    """Tokens, dollars (total and per bucket) and requests for one model or one purpose."""
    tokens: dict[str, int] = field(default_factory=lambda: dict.fromkeys(BUCKETS, 0))
    usd: dict[str, float] = field(default_factory=lambda: dict.fromkeys(BUCKETS, 0.0))
    cost: float = 0.0
    requests: int = 0
    unpriced: int = 0

    def add(self, buckets: Mapping[str, int], total: float | None, parts: Mapping[str, float], sign: int) -> None:
        for k in BUCKETS:
            self.tokens[k] += sign * buckets.get(k, 0)
            self.usd[k] += sign * parts.get(k, 0.0)
        self.requests += sign
        if total is None:
            self.unpriced += sign
        else:
            self.cost += sign * total

    def view(self) -> dict[str, Any]:
        """The shape the cost pane reads: bucket tokens, `cost_usd` (None = unknown price) and,
        when priced, `usd_by_bucket`."""
        out: dict[str, Any] = {**self.tokens, "cost_usd": None if self.unpriced else self.cost,
                               "requests": self.requests}
        if not self.unpriced:
            out["usd_by_bucket"] = dict(self.usd)
        return out


loop_price = shown_price  # the loop's pricing: the demo borrows a real model's prices


class CostBook:
    """Running cost of the watched session by model and by purpose. Each response is priced on its
    own (tiers depend on one request's input) with `usage_report.Pricer`; its dollars are split
    over the buckets by the model's base rates (learned once), so the parts always add up to the
    request's price, and are exact below the first price tier."""

    def __init__(self, pricer: Pricer | None = None) -> None:
        self.price = pricer or Pricer(loop_price)
        self.models: dict[str, CostRow] = {}
        self.purposes: dict[str, CostRow] = {}
        self.saved = 0.0
        self.saved_known = True
        self._learned: dict[str, tuple[float, dict[str, float]] | None] = {}

    def _rates(self, model: str) -> tuple[float, dict[str, float]] | None:
        """(per-request constant, base dollars per token of each bucket), learned once per model."""
        try:
            return self._learned[model]
        except KeyError:
            pass
        const = self.price(model, {})
        rates = None
        if const is not None:
            probes = {k: self.price(model, {k: RATE_PROBE}) for k in BUCKETS}
            if all(v is not None for v in probes.values()):
                rates = (const, {k: (v - const) / RATE_PROBE for k, v in probes.items()})
        self._learned[model] = rates
        return rates

    def add(self, rec: UsageRecord, sign: int = 1) -> None:
        if rec.replaces is not None and sign > 0:
            self.add(rec.replaces, -1)     # a sidechain copy counted earlier: this main copy replaces it
        b = rec.buckets
        total = self.price(rec.model, b)
        learned = self._rates(rec.model) if total is not None else None
        parts: dict[str, float] = {}
        if total is not None and learned is not None:
            const, rates = learned
            base = {k: rates[k] * b.get(k, 0) for k in BUCKETS}
            s = sum(base.values())
            scale = (total - const) / s if s > 0 else 0.0
            parts = {k: v * scale for k, v in base.items()}
            self.saved += sign * (rates["input"] - rates["cache_read"]) * b.get("cache_read", 0)
        elif b.get("cache_read"):
            self.saved_known = False
        for table, key in ((self.models, rec.model), (self.purposes, rec.purpose)):
            row = table.get(key)
            if row is None:
                row = table[key] = CostRow()
            row.add(b, total, parts, sign)

    def event(self) -> CostUpdate:
        models = {m: r.view() for m, r in self.models.items() if r.requests}
        purposes = {p: r.view() for p, r in self.purposes.items() if r.requests}
        known = all(r["cost_usd"] is not None for r in models.values())
        total = sum(r["cost_usd"] for r in models.values()) if known else None
        ev = CostUpdate(total_usd=total, by_model=models, by_purpose=purposes if len(purposes) > 1 else {})
        # Set as attributes, not constructor arguments: older CostUpdate versions lack these fields,
        # and the cost pane reads them from the event first.
        ev.cache_hit_rate = self.cache_hit_rate() or 0.0
        ev.saved_usd = self.saved if self.saved_known and models else None
        return ev

    def total_usd(self) -> float | None:
        rows = [r for r in self.models.values() if r.requests]
        return None if any(r.unpriced for r in rows) else sum(r.cost for r in rows)

    def cache_hit_rate(self) -> float | None:
        tok = dict.fromkeys(BUCKETS, 0)
        for r in self.models.values():
            for k in BUCKETS:
                tok[k] += r.tokens[k]
        total = tok["input"] + tok["cache_write_5m"] + tok["cache_write_1h"] + tok["cache_read"]
        return tok["cache_read"] / total if total else None


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

    @property
    def freed(self) -> int | None:
        if self.tokens_before is None or self.tokens_after is None:
            return None
        return max(0, self.tokens_before - self.tokens_after)

    def event(self) -> Compaction:
        """The loop's event (unknown numbers as 0)."""
        return Compaction(layer=self.layer, trigger=self.trigger, tokens_before=self.tokens_before or 0,
                          tokens_after=self.tokens_after or 0, timestamp=self.timestamp or 0.0)


# ------------------------------------------------------------------ the state

@dataclass
class WatchUpdate:
    """What one poll changed: each field is None / empty when that part did not change."""
    records: int = 0
    context: ContextUpdate | None = None
    cost: CostUpdate | None = None
    compactions: list[CompactionView] = field(default_factory=list)
    header_changed: bool = False
    reset: bool = False       # the log was replaced or rewritten: everything was re-read from its start

    @property
    def changed(self) -> bool:
        return bool(self.context or self.cost or self.compactions or self.header_changed or self.reset)


class WatchState:
    """The watched session: context, cost and compactions so far. Call `poll()` from one thread
    at a time (the screen loads a big log in a thread, then polls on each file change)."""

    def __init__(self, path: str | Path, *, context_window: int | None = None, pricer: Pricer | None = None) -> None:
        self.path = Path(path)
        self.context_window = context_window
        self._start(CostBook(pricer))

    def _start(self, cost: CostBook) -> None:
        """Nothing read yet: at the start, and again when a log was replaced or rewritten."""
        self.dedup = Deduper()
        self.readers: dict[Path, LogReader] = {}
        self._reader(self.path)
        self.meta: dict[str, Any] = {}
        self._meta_read = False
        self.model: str | None = None
        self._budgets: dict[str | None, BudgetInfo] = {}
        self.info = self._budget_info(None)
        self.session_id: str | None = None
        self.tokens: int | None = None
        self.last_buckets: dict[str, int] | None = None     # None after a compaction: an estimate
        self.turns = 0
        self.history: deque[tuple[int, int, bool]] = deque(maxlen=HISTORY_POINTS)
        self.compactions: dict[str, CompactionView] = {}
        self.cost = cost
        self.records = 0
        self.responses = 0
        self.first_ts: float | None = None
        self.last_ts: float | None = None
        self._mark_next = False

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
        info = self._budgets.get(model)
        if info is None:
            logged = self.meta.get("config") if self.meta else None
            info = self._budgets[model] = budget_for(
                model, BudgetSettings.from_logged(logged, context_window=self.context_window))
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
            self._start(CostBook(self.cost.price))
            up = self._poll()
            up.reset = True
        return up

    def _resets(self) -> int:
        return sum(r.follower.resets for r in self.readers.values())

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
        if context_changed:
            up.context = self.context_event()
        if cost_changed:
            up.cost = self.cost.event()
        up.header_changed |= bool(up.records) or self.skipped != skipped
        return up

    def _seen(self, ts: float | None) -> None:
        if ts is not None:
            self.first_ts = ts if self.first_ts is None else min(self.first_ts, ts)
            self.last_ts = ts if self.last_ts is None else max(self.last_ts, ts)

    def _usage(self, rec: UsageRecord) -> bool:
        self.cost.add(rec)
        self._seen(rec.timestamp)
        self.responses += 1 if rec.replaces is None else 0
        if rec.purpose != "main" or rec.is_sidechain:
            return False
        self.session_id = rec.session_id
        if rec.model != self.model:
            self.model = rec.model
            self.info = self._budget_info(rec.model)
        self.tokens = rec.context_tokens
        self.last_buckets = dict(rec.buckets)
        self.turns += 1
        self.history.append((self.turns, rec.context_tokens, self._mark_next))
        self._mark_next = False
        return True

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
        if rec.tokens_after is not None:      # ctxtui logs the count after each compaction
            self.tokens = rec.tokens_after
            self.last_buckets = None
            self.history.append((self.turns, rec.tokens_after, True))
            return True
        self._mark_next = True                # Claude Code: the next response's context is the count after
        return False

    # -- views
    def context_event(self) -> ContextUpdate | None:
        """The context numbers now, as the loop's `Agent.context_event` would give them."""
        if self.tokens is None:
            return None
        b = self.budget
        t = self.tokens
        cats: dict[str, int] = {}
        if self.last_buckets is not None:
            lb = self.last_buckets
            cats = {"cache_read": lb.get("cache_read", 0),
                    "cache_write": lb.get("cache_write_5m", 0) + lb.get("cache_write_1h", 0),
                    "input": lb.get("input", 0), "output": lb.get("output", 0)}
        else:
            cats = {"estimated": t}
        cats["free"] = max(0, b.autocompact_threshold - t)
        cats["autocompact_buffer"] = b.context_window - b.autocompact_threshold
        return context_update(b, t, cats)

    def history_points(self) -> tuple[tuple[int, int, bool], ...]:
        return tuple(self.history)

    def cost_extras(self) -> dict[str, Any]:
        """Figures the cost pane shows besides the event: cache hit rate, what caching saved, and
        the burn rate over the log's own time span (from its timestamps, not the wall clock)."""
        out: dict[str, Any] = {}
        hit = self.cost.cache_hit_rate()
        if hit is not None:
            out["cache_hit_rate"] = hit
        if self.cost.saved_known and self.cost.models:
            out["saved_usd"] = self.cost.saved
        total = self.cost.total_usd()
        if total is not None and self.first_ts is not None and self.last_ts is not None:
            hours = (self.last_ts - self.first_ts) / 3600
            if hours > 1 / 60:
                out["burn_usd_per_hour"] = total / hours
        return out

    def compaction_events(self) -> list[Compaction]:
        return [v.event() for v in self.compactions.values()]
