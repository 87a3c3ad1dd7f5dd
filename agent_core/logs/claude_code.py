"""Claude Code session logs (`~/.claude/projects/<project>/<session>.jsonl`) -> normalized records.

Read, never written. What matters in them:
- each content block of a response is its own `assistant` record repeating `message.usage`;
  only the last copy holds the final output count: counted once, on `message.id` + `requestId`,
  with the last copy's usage (`final_usage`, `Deduper`);
- sub-agent calls are `isSidechain: true` records, in the session file (older versions) or in
  `<session>/subagents/*.jsonl`; a sidechain replay of a main-chain response counts once;
- a running sub-agent's responses are also written into the main log as `progress` records
  (`data.type: "agent_progress"`, the response in `data.message`): read as that sub-agent's
  sidechain responses, so a sub-agent whose own log is missing is still counted, and once when it
  is not (the same `message.id` + `requestId`);
- `<synthetic>` responses are made by Claude Code itself: no API call, no cost;
- a compaction is `{"type":"system","subtype":"compact_boundary","compactMetadata":{...}}` then a
  user record with `isCompactSummary: true`; the tokens after it are the next response's context.
"""
from __future__ import annotations

import itertools
import math
import os
from datetime import datetime

from agent_core.pricing.cost import FREE_MODELS
from agent_core.logs.records import CompactionRecord, Deduper, Record, UsageRecord, buckets_of, request_tokens

TYPE_CHECKING = False    # typing stays unloaded at run time: 3 ms of every status line call
if TYPE_CHECKING:
    from typing import Any, Iterable

MAX_TIMESTAMP = 32_503_680_000.0     # 3000-01-01 UTC
_ANONYMOUS = itertools.count()


def parse_timestamp(value: Any) -> float | None:
    """Epoch seconds from an ISO-8601 string (Claude Code) or a number (ctxtui); None if unreadable
    or outside 1970..3000 (a date there would crash every date conversion downstream)."""
    ts: float | None = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        ts = float(value) if -1e300 < value < 1e300 else None
    elif isinstance(value, str) and value:
        try:
            ts = datetime.fromisoformat(value).timestamp()
        except (ValueError, OverflowError, OSError):
            return None
    return ts if ts is not None and 0 <= ts <= MAX_TIMESTAMP else None


def response_key(obj: dict) -> str:
    """What identifies one model response across its copies: `message.id` + `requestId`
    (`message.id` alone when there is no requestId; the record's uuid when there is neither)."""
    msg = obj.get("message")
    mid = msg.get("id") if isinstance(msg, dict) else None
    rid = obj.get("requestId")
    if mid and rid:
        return f"{mid}:{rid}"
    if mid:
        return str(mid)
    # Nothing to deduplicate on: every record counts, under a key no other record gets (not id(obj):
    # an address is used again once the object is freed, and a worker process has its own).
    return f"uuid:{obj.get('uuid') or f'#{os.getpid()}.{next(_ANONYMOUS)}'}"


def final_usage(records: Iterable[dict]) -> dict[str, dict]:
    """`message.usage` of each response in these assistant records, taken from its LAST copy:
    Claude Code writes one record per content block, each repeating the usage, and only the last
    holds the final output count. Keys are `response_key`s, in order of first appearance. The same
    rule as `Deduper` (records.py) applies to the usage report and watch; replay uses this."""
    out: dict[str, dict] = {}
    for obj in records:
        msg = obj.get("message") if isinstance(obj, dict) else None
        if isinstance(msg, dict) and isinstance(msg.get("usage"), dict):
            out[response_key(obj)] = msg["usage"]
    return out


def is_candidate(line: bytes) -> bool:
    """Cheap pre-filter: could this line carry usage or a compaction? Lines that cannot are never
    parsed. (`ompact` covers both `compact_boundary` and `isCompactSummary` in one scan.)"""
    return line.rfind(b'"usage"') >= 0 or b"ompact" in line     # rfind: a response's usage is near its end


def is_compact_boundary(obj: dict) -> bool:
    """`{"type":"system","subtype":"compact_boundary",...}`: where a compaction happened."""
    return obj.get("type") == "system" and obj.get("subtype") == "compact_boundary"


def compact_metadata(obj: dict) -> dict:
    """A boundary's `compactMetadata` (trigger, preTokens), {} when missing or not an object."""
    meta = obj.get("compactMetadata")
    return meta if isinstance(meta, dict) else {}


def is_compact_summary(obj: dict) -> bool:
    """The user record holding a compaction's summary."""
    return bool(obj.get("isCompactSummary"))


def agent_progress_response(obj: dict) -> dict | None:
    """The sub-agent response a `progress` record carries, as a sidechain assistant record of the
    session (its own timestamp, else the record's), or None when it carries none."""
    data = obj.get("data")
    if not isinstance(data, dict) or data.get("type") != "agent_progress":
        return None
    inner = data.get("message")
    if not isinstance(inner, dict) or inner.get("type") != "assistant" or not isinstance(inner.get("message"), dict):
        return None
    agent = data.get("agentId") if isinstance(data.get("agentId"), str) else inner.get("agentId")
    return {**inner, "isSidechain": True, "sessionId": obj.get("sessionId", inner.get("sessionId")),
            "agentId": agent, "timestamp": inner.get("timestamp") or obj.get("timestamp")}


# What one line holds for the usage report, found without any state (`extract`): a response's
# usage, a compaction boundary, or a compaction summary. Plain tuples, so a worker process can
# find them and the reading process apply them in the logs' order (agent_core/logs/prefetch.py).
USAGE, BOUNDARY, SUMMARY = 0, 1, 2


def _session(obj: dict, fallback: str) -> str:
    sid = obj.get("sessionId")
    return sid if isinstance(sid, str) and sid else fallback


def extract(obj: dict, fallback_session: str) -> tuple | None:
    """The facts of one record that `ClaudeCodeParser.apply` turns into records, or None when it
    holds none. Pure: raises CorruptRecord for usage that cannot be read."""
    kind = obj.get("type")
    if kind == "assistant":
        return _usage_facts(obj, fallback_session)
    if kind == "progress":
        inner = agent_progress_response(obj)
        return _usage_facts(inner, fallback_session) if inner is not None else None
    if is_compact_boundary(obj):
        meta = compact_metadata(obj)
        pre = meta.get("preTokens")
        session = _session(obj, fallback_session)
        return (BOUNDARY, str(obj.get("uuid") or f"{session}@{obj.get('timestamp')}"), session,
                parse_timestamp(obj.get("timestamp")), str(meta.get("trigger") or "unknown"),
                pre if isinstance(pre, int) and not isinstance(pre, bool) else None, bool(obj.get("isSidechain")))
    if kind == "user" and is_compact_summary(obj):
        session = _session(obj, fallback_session)
        return (SUMMARY, str(obj.get("uuid") or f"{session}@{obj.get('timestamp')}"), session,
                parse_timestamp(obj.get("timestamp")), bool(obj.get("isSidechain")))
    return None


def _usage_facts(obj: dict, fallback_session: str) -> tuple | None:
    msg = obj.get("message")
    if not isinstance(msg, dict):
        return None
    usage = msg.get("usage")
    model = msg.get("model")
    model = model if isinstance(model, str) and model else "unknown"   # a damaged log: any JSON type
    if not isinstance(usage, dict) or model in FREE_MODELS:
        return None
    buckets = buckets_of(usage)     # may raise CorruptRecord
    agent = obj.get("agentId")
    return (USAGE, response_key(obj), bool(obj.get("isSidechain")), _session(obj, fallback_session), buckets, model,
            parse_timestamp(obj.get("timestamp")), agent if isinstance(agent, str) else None,
            _logged_usd(obj.get("costUSD")))


class ClaudeCodeParser:
    """Stateful: keeps the compaction waiting for its tokens-after, per session."""

    source = "claude_code"

    def __init__(self, path: str, fallback_session: str, dedup: Deduper) -> None:
        self.path = path
        self.fallback_session = fallback_session
        self.dedup = dedup
        self._pending: dict[str, CompactionRecord] = {}

    def wants(self, line: bytes) -> bool:
        return is_candidate(line)

    @property
    def pending(self) -> dict[str, CompactionRecord]:
        """The compactions still waiting for their tokens-after, per session: what a reader that
        goes on from this file's end later must start from (`ctxtui usage`'s saved state)."""
        return self._pending

    @pending.setter
    def pending(self, waiting: dict[str, CompactionRecord]) -> None:
        self._pending = dict(waiting)

    def parse(self, obj: dict) -> list[Record]:
        facts = extract(obj, self.fallback_session)
        return [] if facts is None else self.apply(facts)

    def apply(self, facts: tuple) -> list[Record]:
        """The records for one line's `extract` facts, in the order the lines come."""
        kind = facts[0]
        if kind == USAGE:
            return self._usage(*facts[1:])
        if kind == BOUNDARY:
            return self._boundary(*facts[1:])
        return self._summary(*facts[1:])

    def _usage(self, key: str, sidechain: bool, session: str, buckets: dict[str, int], model: str,
               timestamp: float | None, agent: str | None, logged_usd: float | None) -> list[Record]:
        pending = None if sidechain else self._pending.pop(session, None)
        if pending is None and not self.dedup.wanted(key, sidechain, buckets):
            return []               # another content block of a response already counted, same usage
        rec = UsageRecord(session, model, timestamp, key, buckets, sidechain, request_tokens(buckets), "claude_code",
                          self.path, agent, "subagent" if sidechain else "main", None, logged_usd)
        admitted = self.dedup.admit(rec)
        if pending is None:
            return [] if admitted is None else [admitted]
        pending.tokens_after = rec.context_tokens
        return [pending] if admitted is None else [pending, admitted]

    def _boundary(self, key: str, session: str, timestamp: float | None, trigger: str, tokens_before: int | None,
                  sidechain: bool) -> list[Record]:
        rec = CompactionRecord(key=key, session_id=session, timestamp=timestamp, trigger=trigger,
                               tokens_before=tokens_before, is_sidechain=sidechain, source=self.source,
                               path=self.path)
        if not rec.is_sidechain:
            self._pending[session] = rec
        return [rec]

    def _summary(self, key: str, session: str, timestamp: float | None, sidechain: bool) -> list[Record]:
        pending = self._pending.get(session)
        if pending is not None:
            pending.has_summary = True
            return []
        # A summary with no boundary before it (older logs): a compaction of unknown size.
        rec = CompactionRecord(key=key, session_id=session, timestamp=timestamp, trigger="unknown",
                               tokens_before=None, is_sidechain=sidechain, has_summary=True, source=self.source,
                               path=self.path)
        if not rec.is_sidechain:
            self._pending[session] = rec
        return [rec]


def _logged_usd(value: object) -> float | None:
    """Claude Code's `costUSD` (written by some versions): a finite, non-negative number, else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None
