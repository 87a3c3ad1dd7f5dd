"""Bringing a `StatusState` up to date: read only what was appended to the logs it covers.

The logs covered: the session's transcript and its sub-agent logs, plus every other log of the
projects folder written in the last day (for today's dollars and the active 5-hour block). A log
whose identity changed, that shrank, or whose bytes before the saved offset changed is counted
again from its start. Records go through the one log layer (`agent_core.logs`); a response seen
in an earlier call is seeded into the reader's `Deduper`, so a later copy of it comes back with
`replaces=` set, exactly as within one read.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from agent_core.logs import Deduper, LogReader, UsageRecord, fast_decode
from agent_core.logs.fact_scan import FactsReader, scan_facts
from agent_core.pricing.cost import BUCKETS
from agent_core.usage.block_rule import Block, fold
from agent_core.logs.discover import expand, subagent_logs
from agent_core.statusline.state import (ACTIVITY_S, MARK_BYTES, RECENT_KEYS, LogState, Prices,
                                                 StatusState, day_of)

TYPE_CHECKING = False    # typing stays unloaded at run time: 3 ms of every status line call
if TYPE_CHECKING:
    from typing import Iterable, Iterator

    from agent_core.logs.records import Record


def logs_to_read(transcript: Path, projects: Path | None, now: float) -> list[Path]:
    """The transcript and its sub-agent logs first, then the projects folder's other logs written
    in the last day (a folder that does not exist gives none)."""
    own = [transcript, *subagent_logs(transcript)]
    out = list(own)
    if projects is not None and projects.is_dir():
        seen = {str(p) for p in own}
        for f in expand(projects):
            if str(f) in seen:
                continue
            try:
                if now - f.stat().st_mtime <= ACTIVITY_S:
                    out.append(f)
            except OSError:
                continue
    return out


def _mark(path: Path, offset: int) -> str:
    """Hex of the bytes just before `offset`: if they change, the log was rewritten."""
    if offset <= 0:
        return ""
    with open(path, "rb") as f:
        f.seek(max(0, offset - MARK_BYTES))
        return f.read(min(offset, MARK_BYTES)).hex()


def _unchanged_or_reset(st: os.stat_result, log: LogState, path: Path) -> tuple[bool, LogState]:
    """(nothing new to read, the log state to continue from)."""
    ident = [st.st_dev, st.st_ino]
    same_size = st.st_size == log.offset
    if log.ident == ident and same_size and log.mtime_ns in (None, st.st_mtime_ns):
        return True, log
    if log.ident and (log.ident != ident or st.st_size < log.offset or same_size
                      or _mark(path, log.offset) != log.mark):
        log = LogState()
    log.ident = ident
    return False, log


def _seeded(state: StatusState) -> Deduper:
    dedup = Deduper()
    for key, (path, model, counts, sidechain, ts) in state.recent.items():
        dedup.admit(UsageRecord(session_id="", model=model, timestamp=ts, request_key=key,
                                buckets=dict(zip(BUCKETS, counts)),
                                is_sidechain=sidechain, path=path,
                                purpose="subagent" if sidechain else "main"))
    return dedup


def _scan(path: Path, dedup: Deduper, loads) -> tuple[Iterator[Record], str | None, int] | None:
    """A big log read from its start through `fact_scan` (only its record lines are copied out and
    decoded, and a run of copies of one response is applied as its last): its records as
    `LogReader.records()` gives them, its format and where its last whole line ends; None for a
    log that is not Claude Code's."""
    # Two processes for one big log (its first read): forks, pipes and threads are loaded for that alone
    from agent_core.logs.prefetch import split_scan  # noqa: PLC0415  (start-up time)

    scanned = split_scan(path, loads, final=False) or scan_facts(path, loads, final=False)
    if scanned[0] not in ("claude_code", None):
        return None
    reader = FactsReader(path, dedup, scanned)
    return reader.records(), reader.format, reader.offset


def _book(state: StatusState, rec: UsageRecord, prices: Prices, sign: int) -> None:
    log = state.logs.get(rec.path)
    if log is None:
        return
    usd = prices(rec.model, rec.buckets, rec.timestamp)
    if usd is None:
        log.unpriced += sign
        return
    log.usd += sign * usd
    if rec.timestamp is not None:
        day, minute = _day_and_minute(rec.timestamp)
        log.days[day] = log.days.get(day, 0.0) + sign * usd
        log.minute_usd[minute] = log.minute_usd.get(minute, 0.0) + sign * usd


_last_minute: list = [None, "", ""]      # ((minute, zone), its day, its key): responses come minutes at a time


def _day_and_minute(ts: float) -> tuple[str, str]:
    """The local day and the minute key of `ts`, worked out once per minute (every time zone's day,
    and every change of its offset, begins on a whole minute) and per time zone (tzset)."""
    at = (int(ts // 60), time.tzname, time.timezone)
    if _last_minute[0] != at:
        _last_minute[:] = [at, day_of(at[0] * 60), str(at[0])]
    return _last_minute[1], _last_minute[2]


def _apply(state: StatusState, rec: UsageRecord, prices: Prices) -> None:
    if rec.replaces is not None:
        _book(state, rec.replaces, prices, -1)
    _book(state, rec, prices, +1)
    state.recent.pop(rec.request_key, None)
    state.recent[rec.request_key] = [rec.path, rec.model, [rec.buckets.get(k, 0) for k in BUCKETS],
                                     rec.is_sidechain, rec.timestamp]
    log = state.logs.get(rec.path)
    if log is None:
        return
    if rec.timestamp is not None:
        minute = int(rec.timestamp // 60)
        if not log.minutes or log.minutes[-1] != minute:
            log.minutes.append(minute)
    if not rec.is_sidechain and rec.purpose == "main":
        last = log.last
        if last is None or (rec.timestamp or 0) >= (last.get("ts") or 0):
            log.last = {"model": rec.model, "buckets": rec.buckets, "ts": rec.timestamp}


def refresh(state: StatusState, paths: Iterable[Path], prices: Prices, now: float) -> None:
    """Read what was appended to each log since the state was saved; forget old activity."""
    state.reads = 0
    dedup: Deduper | None = None
    for path in paths:
        key = str(path)
        try:
            st = path.stat()
            known = state.logs.get(key) or LogState()
            unchanged, log = _unchanged_or_reset(st, known, path)
        except OSError:
            continue
        if log is not known and known.ident:
            # Read again from the start: its responses are new again, not repeats of what it said before.
            state.recent = {k: v for k, v in state.recent.items() if v[0] != key}
            dedup = None
        state.logs[key] = log
        if unchanged:
            continue
        if dedup is None:
            dedup = _seeded(state)
        big = fast_decode.worth_it(st.st_size - log.offset)
        loads = fast_decode.decoder() if big else None
        try:
            scanned = _scan(path, dedup, loads) if big and log.offset == 0 else None
            if scanned is not None:
                records, fmt, end = scanned
            else:
                reader = LogReader(path, dedup=dedup, fmt=log.fmt, offset=log.offset, loads=loads)
                records = reader.records()
            for rec in records:
                if isinstance(rec, UsageRecord):
                    rec.path = key
                    _apply(state, rec, prices)
            if scanned is None:
                fmt, end = reader.format, reader.follower.line_offset
            log.fmt = fmt
            state.reads += end - log.offset
            log.offset = end
            log.mark = _mark(path, log.offset)
            after = path.stat()       # it may have grown while it was read: then its time says nothing
            log.mtime_ns = after.st_mtime_ns if after.st_size == log.offset else None
        except OSError:
            continue
    _trim(state, now)


def _trim(state: StatusState, now: float) -> None:
    """Forget activity older than a day; its newest 5-hour block is kept (`state.block`), so a
    block chain longer than a day keeps its start."""
    oldest = int((now - ACTIVITY_S) // 60)
    forgotten = sorted(m for log in state.logs.values() for m in log.minutes if m < oldest)
    block = Block(*state.block) if state.block else None
    for m in forgotten:
        block = fold(block, m * 60.0)
    if block is not None:
        state.block = [block.start, block.end, block.last_activity]
    for log in state.logs.values():
        if log.minutes and log.minutes[0] < oldest:
            log.minutes = [m for m in log.minutes if m >= oldest]
        if any(int(m) < oldest for m in log.minute_usd):
            log.minute_usd = {m: v for m, v in log.minute_usd.items() if int(m) >= oldest}
        if len(log.days) > 2:
            keep = sorted(log.days)[-2:]
            log.days = {d: log.days[d] for d in keep}
    while len(state.recent) > RECENT_KEYS:
        del state.recent[next(iter(state.recent))]
