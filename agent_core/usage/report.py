"""Tokens and dollars over session-log records, per model, day, purpose and session (`ctxtui usage`).

Each record is booked into a `agent_core.pricing.tally.Tally` row, priced on its own by one shared
`Pricer` (fast for logs with 100,000 responses): the same rows and prices the loop and watch use.
"""
from __future__ import annotations

from collections import namedtuple
from collections.abc import Iterable
from datetime import date, datetime, timezone, tzinfo
from pathlib import Path

from agent_core.logs.layout import is_subagent_log, subagent_session_dir
from agent_core.logs.records import CompactionRecord, Record, UsageRecord
from agent_core.pricing.pricer import Priced, Pricer
from agent_core.pricing.tally import Tally
from agent_core.slots import ValueSlots
from agent_core.usage.periods import UNKNOWN, period_of

Cell = tuple[str, str, str]     # (model, day, purpose)

TYPE_CHECKING = False    # typing and dataclasses stay unloaded: `ctxtui usage` runs again and again
if TYPE_CHECKING:
    from typing import Any


def iso(ts: float | None) -> str | None:
    return None if ts is None else datetime.fromtimestamp(ts, timezone.utc).isoformat().replace("+00:00", "Z")


def project_of(path: str) -> str:
    """Claude Code: the project folder (`projects/<project>/<session>.jsonl`, sub-agent logs one
    level deeper); ctxtui: the workspace's state folder holding `sessions/<id>.jsonl` (or, for logs
    of older versions, the folder holding `.ctxtui/sessions/`)."""
    p = Path(path)
    parent = subagent_session_dir(p).parent if is_subagent_log(p) else p.parent
    if parent.name == "sessions" and parent.parent.name == ".ctxtui":
        return parent.parent.parent.name
    if parent.name == "sessions":
        return parent.parent.name
    return parent.name


def _sum(tallies: Iterable[Tally]) -> Tally:
    out = Tally()
    for t in tallies:
        out.merge(t)
    return out


class SessionSummary(ValueSlots):
    """One session; its tokens are kept per (model, day, purpose) cell, the finest grouping any
    view needs, so each record updates one tally and the other views are sums of cells. Written
    out, and Response and Mismatch named tuples: importing dataclasses was a sixth of a repeated
    report's run."""

    __slots__ = ("session_id", "source", "project", "cells", "models", "first", "last", "subagent_requests",
                 "last_context_tokens", "compactions", "last_main")

    def __init__(self, session_id: str, source: str, project: str, cells: dict[Cell, Tally] | None = None,
                 models: set[str] | None = None, first: float | None = None, last: float | None = None,
                 subagent_requests: int = 0, last_context_tokens: int = 0,
                 compactions: dict[str, CompactionRecord] | None = None, last_main: float | None = None) -> None:
        self.session_id = session_id
        self.source = source
        self.project = project
        self.cells: dict[Cell, Tally] = {} if cells is None else cells
        self.models: set[str] = set() if models is None else models
        self.first = first
        self.last = last
        self.subagent_requests = subagent_requests
        self.last_context_tokens = last_context_tokens
        self.compactions: dict[str, CompactionRecord] = {} if compactions is None else compactions
        self.last_main = last_main          # the latest main-chain response's time: its context is the session's

    @property
    def tally(self) -> Tally:
        return _sum(self.cells.values())

    def by_model(self) -> dict[str, Tally]:
        out: dict[str, Tally] = {}
        for (model, _, _), t in self.cells.items():
            if t.requests:
                out.setdefault(model, Tally()).merge(t)
        return out

    def see(self, ts: float | None) -> None:
        if ts is not None:
            self.first = ts if self.first is None else min(self.first, ts)
            self.last = ts if self.last is None else max(self.last, ts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id, "source": self.source, "project": self.project,
            "first_timestamp": iso(self.first), "last_timestamp": iso(self.last),
            "models": sorted(self.models), **self.tally.report_dict(),
            "subagent_requests": self.subagent_requests, "last_context_tokens": self.last_context_tokens,
            "compactions": [compaction_dict(c) for c in sorted(self.compactions.values(), key=_when)],
        }


def _when(c: CompactionRecord) -> tuple:
    """A session's compactions in time order (then by key): the same whatever order the logs were read in."""
    return (c.timestamp is None, c.timestamp or 0.0, c.key)


def compaction_dict(c: CompactionRecord) -> dict[str, Any]:
    return {"timestamp": iso(c.timestamp), "trigger": c.trigger, "layer": c.layer,
            "tokens_before": c.tokens_before, "tokens_after": c.tokens_after, "is_sidechain": c.is_sidechain}


class Response(namedtuple("Response", "timestamp model session_id buckets priced")):
    """One counted response (time, model, session, buckets, its `Priced`), kept only when a report
    needs the time of each (5-hour blocks)."""
    __slots__ = ()


COST_MODES = ("auto", "calculate", "display")


class Mismatch(namedtuple("Mismatch", "request_key model timestamp logged_usd calculated_usd path")):
    """A response whose logged price (`costUSD`) and calculated one differ (`usage --debug`)."""
    __slots__ = ()


class UsageReport:
    """Accumulates records; `since`/`until` keep the records of those days (inclusive). Days are in
    `tz` (a tzinfo; None = local time; `utc=True` is `tz=timezone.utc`). `keep_responses` also keeps
    each response's time and tokens in `responses` (for the 5-hour blocks)."""

    def __init__(self, since: date | None = None, utc: bool = False, pricer: Pricer | None = None, *,
                 until: date | None = None, tz: tzinfo | None = None, keep_responses: bool = False,
                 cost_mode: str = "auto", debug: bool = False) -> None:
        if cost_mode not in COST_MODES:
            raise ValueError(f"cost mode must be one of {', '.join(COST_MODES)}, not {cost_mode!r}")
        self.cost_mode = cost_mode
        # `debug`: the responses whose logged price differs from ctxtui's, by request (a later copy
        # of a response replaces its entry)
        self.mismatches: dict[str, Mismatch] | None = {} if debug else None
        self.since = since
        self.until = until
        self.tz = tz if tz is not None else (timezone.utc if utc else None)
        self.price = pricer or Pricer()
        self.sessions: dict[str, SessionSummary] = {}
        self.responses: dict[str, Response] | None = {} if keep_responses else None
        self.files = 0
        self.skipped_lines = 0
        self.unreadable = 0           # files skipped whole (a FIFO, a device, a symlink loop, no permission)
        self._days: dict[int, str] = {}
        self._since = since.isoformat() if since else None
        self._until = until.isoformat() if until else None

    def day(self, ts: float | None) -> str:
        if ts is None:
            return "unknown"
        slot = int(ts // 900)         # every time zone's offset is a whole number of quarter hours
        d = self._days.get(slot)
        if d is None:
            d = self._days[slot] = datetime.fromtimestamp(ts, self.tz).date().isoformat()
        return d

    def _keep(self, ts: float | None) -> bool:
        if self._since is None and self._until is None:
            return True
        if ts is None:
            return False
        d = self.day(ts)
        return (self._since is None or d >= self._since) and (self._until is None or d <= self._until)

    def _session(self, rec: Record) -> SessionSummary:
        s = self.sessions.get(rec.session_id)
        if s is None:
            s = self.sessions[rec.session_id] = SessionSummary(rec.session_id, rec.source, project_of(rec.path))
        return s

    def add(self, rec: Record) -> None:
        if isinstance(rec, UsageRecord):
            self._usage(rec)
        elif self._keep(rec.timestamp):
            # A compaction is listed with its session but moves neither end of its activity: the
            # first and last activity are those of model responses (as ccusage reports them).
            self._session(rec).compactions[rec.key] = rec

    def add_all(self, records: Iterable[Record]) -> None:
        for rec in records:
            self.add(rec)

    def _usage(self, rec: UsageRecord, sign: int = 1) -> None:
        if rec.replaces is not None and sign > 0:
            self._usage(rec.replaces, -1)
        if not self._keep(rec.timestamp):
            return
        s = self._session(rec)
        cell = (rec.model, self.day(rec.timestamp), rec.purpose)
        t = s.cells.get(cell)
        if t is None:
            t = s.cells[cell] = Tally()
        # Only the dollars: the report never shows their split by bucket or the cache savings, and
        # pricing those too would triple the pricing work of a big log.
        priced = Priced(self._dollars(rec, sign), None, None)
        t.add(rec.buckets, priced, sign)
        if self.responses is not None:
            if sign < 0:
                self.responses.pop(rec.request_key, None)
            elif rec.timestamp is not None:
                self.responses[rec.request_key] = Response(rec.timestamp, rec.model, rec.session_id,
                                                           rec.buckets, priced)
        if rec.is_sidechain:
            s.subagent_requests += sign
        if sign > 0:
            s.models.add(rec.model)
            s.see(rec.timestamp)
            # The latest main-chain response's context (a later one read at the same time wins): a
            # sub-agent's responses, in its own log or in the session's, never change it.
            if rec.purpose == "main" and (s.last_main is None or rec.timestamp is None or rec.timestamp >= s.last_main):
                s.last_context_tokens = rec.context_tokens
                if rec.timestamp is not None:
                    s.last_main = rec.timestamp

    def _dollars(self, rec: UsageRecord, sign: int) -> float | None:
        """A response's dollars in the report's cost mode: `auto` the log's own price where it has
        one (`costUSD`), else ctxtui's; `calculate` always ctxtui's; `display` only the log's (0
        without one), as ccusage's modes do."""
        logged = rec.logged_usd
        wanted = self.cost_mode != "display" or (self.mismatches is not None and logged is not None)
        calculated = self.price(rec.model, rec.buckets, rec.timestamp) if wanted else None
        if self.mismatches is not None and sign > 0:
            self.mismatches.pop(rec.request_key, None)
            if logged is not None and calculated is not None and abs(logged - calculated) > 1e-9 + 1e-6 * logged:
                self.mismatches[rec.request_key] = Mismatch(rec.request_key, rec.model, rec.timestamp, logged,
                                                            calculated, rec.path)
        if self.cost_mode == "calculate" or (self.cost_mode == "auto" and logged is None):
            return calculated
        return logged if logged is not None else 0.0

    def _group(self, index: int) -> dict[str, Tally]:
        out: dict[str, Tally] = {}
        for s in self.sessions.values():
            for cell, t in s.cells.items():
                if not t.requests:    # emptied by a sidechain copy being replaced
                    continue
                g = out.get(cell[index])
                if g is None:
                    g = out[cell[index]] = Tally()
                g.merge(t)
        return out

    @property
    def by_model(self) -> dict[str, Tally]:
        return self._group(0)

    @property
    def by_day(self) -> dict[str, Tally]:
        return self._group(1)

    @property
    def by_purpose(self) -> dict[str, Tally]:
        return self._group(2)

    def by_period(self, period: str, first_weekday: int = 0,
                  project: str | None = None) -> dict[str, dict[str, Tally]]:
        """{period label: {model: tally}} for period day, week or month (see periods.py); of one
        project's sessions only when `project` is given (`--instances`)."""
        out: dict[str, dict[str, Tally]] = {}
        labels: dict[str, str] = {}
        for s in self.sessions.values():
            if project is not None and s.project != project:
                continue
            for (model, day, _), t in s.cells.items():
                if not t.requests:
                    continue
                label = labels.get(day)
                if label is None:
                    label = labels[day] = period_of(day, period, first_weekday)
                out.setdefault(label, {}).setdefault(model, Tally()).merge(t)
        return out

    def keep_last_periods(self, n: int, period: str, first_weekday: int = 0) -> None:
        """Only the `n` most recent days, weeks or months with usage (`--last N`), as if `--since`
        had named the first of them: their sessions' totals, compactions and count follow."""
        labels = [label for label in sorted(self.by_period(period, first_weekday)) if label != UNKNOWN]
        keep = set(labels[-n:])

        def kept(day: str) -> bool:
            return day != UNKNOWN and period_of(day, period, first_weekday) in keep

        for sid, s in list(self.sessions.items()):
            s.cells = {cell: t for cell, t in s.cells.items() if kept(cell[1])}
            s.compactions = {k: c for k, c in s.compactions.items() if kept(self.day(c.timestamp))}
            if not s.cells and not s.compactions:
                del self.sessions[sid]

    def keep_last_sessions(self, n: int) -> None:
        """Only the `n` sessions with the latest activity (`session --last N`)."""
        keep = {s.session_id for s in self.session_list()[-n:]}
        self.sessions = {k: s for k, s in self.sessions.items() if k in keep}

    def projects(self) -> list[str]:
        """The projects with usage, by name."""
        return sorted({s.project for s in self.sessions.values() if any(t.requests for t in s.cells.values())})

    @property
    def totals(self) -> Tally:
        return _sum(t for s in self.sessions.values() for t in s.cells.values())

    def unpriced_models(self) -> list[str]:
        return sorted(m for m, t in self.by_model.items() if t.unpriced)

    def compaction_count(self) -> int:
        return sum(len(s.compactions) for s in self.sessions.values())

    def session_list(self) -> list[SessionSummary]:
        return sorted(self.sessions.values(), key=lambda s: (s.last or 0.0, s.session_id))

    def to_json(self) -> dict[str, Any]:
        by_model, by_day = self.by_model, self.by_day
        return {
            "totals": {**self.totals.report_dict(), "sessions": len(self.sessions),
                       "compactions": self.compaction_count()},
            "by_model": {m: t.report_dict() for m, t in sorted(by_model.items())},
            "by_day": {d: t.report_dict() for d, t in sorted(by_day.items())},
            "by_purpose": {p: t.report_dict() for p, t in sorted(self.by_purpose.items())},
            "sessions": [s.to_dict() for s in self.session_list()],
            "unpriced_models": self.unpriced_models(),
            "files": self.files,
            "skipped_lines": self.skipped_lines,
        }
