"""ctxtui's own session logs (`<state>/sessions/<id>.jsonl`) -> usage and compaction records.

The format is read by agent_core/sessions/ (session_reader.py, and log_records.py for the records
read here); this module only says which records carry usage or a compaction.

Lines are `{"t": kind, ...}`:
- `meta`: session id and model;
- `entry` / `history`: history entries; an assistant entry carries `response_id`, `usage` and
  `meta.model` (re-logged when its content changes: the response id keeps it counted once);
- `event` (`at` = when): `model_call` (message_id, model, purpose, usage: every model call,
  summary calls included), `assistant_done` (message_id, model, usage: a main call again) and
  `compaction` (layer, trigger, tokens_before, tokens_after);
- `state` (`at`): snapshots holding the cost book's cumulative totals. Logs of versions before
  `model_call` (their cost snapshot has no `"version": 2`) have no record of summary and memory
  calls, so for them those calls' usage is the growth of those purposes' totals between
  snapshots (priced as one request per snapshot: exact unless one snapshot spans several such
  calls that straddle a price tier).
"""
from __future__ import annotations

from typing import Any

from agent_core.pricing.cost import BUCKETS, FREE_MODELS
from agent_core.logs.claude_code import parse_timestamp
from agent_core.logs.records import CompactionRecord, Deduper, Record, UsageRecord, buckets_of, context_tokens
from agent_core.sessions.log_records import logged_entries, logged_event

SIDE_PURPOSES = ("compaction", "memory")


def _int(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else 0


def _int_or_none(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


class CtxtuiParser:
    source = "ctxtui"

    def __init__(self, path: str, fallback_session: str, dedup: Deduper) -> None:
        self.path = path
        self.session_id = fallback_session
        self.model = "unknown"
        self.dedup = dedup
        self._n_compactions = 0
        self._purpose_seen: dict[str, tuple[int, dict[str, int]]] = {}   # purpose -> (calls, tokens)

    def wants(self, line: bytes) -> bool:
        return (b'"usage"' in line or b'"compaction"' in line or b'"t":"meta"' in line or b'"t": "meta"' in line
                or b'"purposes"' in line)

    def parse(self, obj: dict) -> list[Record]:
        t = obj.get("t")
        if t in ("entry", "history"):
            return [rec for e in logged_entries(obj) for rec in self._entry(e)]
        if t == "event":
            ev = logged_event(obj)
            return self._event(ev, obj) if ev is not None else []
        if t == "state":
            return self._state(obj)
        if t == "meta":
            sid, model = obj.get("session_id"), obj.get("model")
            if isinstance(sid, str) and sid:
                self.session_id = sid
            if isinstance(model, str) and model:
                self.model = model
        return []

    def _usage(self, key: Any, model: Any, usage: dict, ts: Any, purpose: str = "main") -> list[Record]:
        model = model if isinstance(model, str) and model else self.model
        if model in FREE_MODELS:
            return []
        buckets = buckets_of(usage)
        # A response is counted once within its session (a model_call and the assistant_done of the
        # same answer share its id), never across sessions: the offline demo's ids come from the
        # request, so two sessions that start alike repeat them, and the second one was lost.
        rec = UsageRecord(
            session_id=self.session_id, model=model, timestamp=parse_timestamp(ts),
            request_key=f"{self.session_id}/{key}",
            buckets=buckets, context_tokens=context_tokens(buckets) if purpose == "main" else 0,
            source=self.source,
            path=self.path, purpose=purpose)
        admitted = self.dedup.admit(rec)
        return [admitted] if admitted is not None else []

    def _entry(self, e: dict) -> list[Record]:
        usage = e.get("usage")
        if not isinstance(usage, dict):
            return []
        meta = e.get("meta")
        meta = meta if isinstance(meta, dict) else {}
        key = e.get("response_id") or f"uuid:{e.get('uuid')}"
        return self._usage(key, meta.get("model"), usage, e.get("timestamp"))

    def _event(self, ev: dict, line: dict) -> list[Record]:
        kind = ev.get("type")
        if kind == "model_call" and isinstance(ev.get("usage"), dict):
            purpose = ev.get("purpose")
            purpose = purpose if isinstance(purpose, str) and purpose else "main"
            key = ev.get("message_id") or f"{purpose}@{line.get('at')}"
            return self._usage(key, ev.get("model"), ev["usage"], line.get("at"), purpose)
        if kind == "assistant_done" and isinstance(ev.get("usage"), dict) and ev.get("message_id"):
            return self._usage(ev["message_id"], ev.get("model"), ev["usage"], line.get("at"))
        if kind != "compaction":
            return []
        self._n_compactions += 1
        at = line.get("at")     # stable across readers started at different offsets
        key = (f"{self.session_id}@{at}:{ev.get('layer')}" if at is not None
               else f"{self.session_id}#{self._n_compactions}")
        return [CompactionRecord(
            key=key, session_id=self.session_id,
            timestamp=parse_timestamp(line.get("at")), trigger=str(ev.get("trigger") or "unknown"),
            tokens_before=_int_or_none(ev.get("tokens_before")), tokens_after=_int_or_none(ev.get("tokens_after")),
            layer=str(ev.get("layer") or "compact"), has_summary=bool(ev.get("transcript_path")),
            source=self.source, path=self.path)]

    def _state(self, obj: dict) -> list[Record]:
        cost = obj.get("cost")
        if not isinstance(cost, dict) or not isinstance(cost.get("purposes"), dict):
            return []
        if cost.get("version") == 2:    # this version logs every call as a `model_call` record
            return []
        models = cost.get("models")
        model = next(iter(models)) if isinstance(models, dict) and len(models) == 1 else self.model
        out: list[Record] = []
        for purpose in SIDE_PURPOSES:
            tally = cost["purposes"].get(purpose)
            if not isinstance(tally, dict):
                continue
            calls = _int(tally.get("calls"))
            raw = tally.get("tokens")
            raw = raw if isinstance(raw, dict) else {}
            tokens = {k: _int(raw.get(k)) for k in BUCKETS}
            prev_calls, prev = self._purpose_seen.get(purpose, (0, dict.fromkeys(BUCKETS, 0)))
            if calls < prev_calls:      # totals went back (a different run): start over
                prev_calls, prev = 0, dict.fromkeys(BUCKETS, 0)
            self._purpose_seen[purpose] = (calls, tokens)
            if calls == prev_calls:
                continue
            delta = {k: max(tokens[k] - prev[k], 0) for k in BUCKETS}
            usage = {"input_tokens": delta["input"], "output_tokens": delta["output"],
                     "cache_creation_input_tokens": delta["cache_write_5m"] + delta["cache_write_1h"],
                     "cache_creation": {"ephemeral_5m_input_tokens": delta["cache_write_5m"],
                                        "ephemeral_1h_input_tokens": delta["cache_write_1h"]},
                     "cache_read_input_tokens": delta["cache_read"]}
            out.extend(self._usage(f"{purpose}:{calls}", model, usage, obj.get("at"), purpose))
        return out
