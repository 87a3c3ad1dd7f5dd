"""ctxtui session log records -> one trajectory.

The records are read with the session reader's helpers (`logged_entries`, `logged_event`), the
one reader of this format. An assistant entry with a response id and usage is a request; the
entries logged since the previous one are its `added`; a `history` record (any compaction layer
rewrote the working history) makes the next request start from `context_after_compaction`, the
working history as rewritten, with the `compaction` events logged after it as its
`compaction_before`. `model_call` events of other purposes (summary, memory) are the log's own
side calls (`compaction_calls`).
"""
from __future__ import annotations

from typing import Any

from compaction.entry import NOT_SENT
from compaction.estimate import estimate_message

from agent_core.logs.claude_code import parse_timestamp
from agent_core.logs.records import CorruptRecord, buckets_of
from agent_core.logs.trajectory import Message, RecordedCompaction, Request, Trajectory
from agent_core.logs.trajectory_claude_code import as_blocks, content_key, overhead_of
from agent_core.logs.trajectory_refs import call_files, call_references, unique
from agent_core.logs.trajectory_sizes import calibrate
from agent_core.sessions.session_reader import logged_entries, logged_event

KIND_OF_ENTRY = {"summary": "summary", "attachment": "attachment", "snip_marker": "other"}


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


class CtxtuiBuilder:
    def __init__(self, path: str, fallback_session: str) -> None:
        self.path = path
        self.session_id = fallback_session
        self.model = "unknown"
        self.bad = 0
        self.messages: dict[str, Message] = {}       # entry uuid -> its message (latest version)
        self.working: list[str] = []                 # the working history, as uuids
        self.calls: dict[str, Any] = {}              # tool_use id -> input
        self.requests: list[Request] = []
        self.side: list[Request] = []
        self.pending: list[Message] = []
        self.previous: Message | None = None
        self.after: list[Message] | None = None
        self.compaction: RecordedCompaction | None = None
        self.seen: set[str] = set()

    def feed(self, obj: dict) -> None:
        try:
            self._feed(obj)
        except (CorruptRecord, TypeError, ValueError, AttributeError, KeyError):
            self.bad += 1

    def _feed(self, obj: dict) -> None:
        t = obj.get("t")
        if t == "meta":
            if isinstance(obj.get("session_id"), str) and obj["session_id"]:
                self.session_id = obj["session_id"]
            if isinstance(obj.get("model"), str) and obj["model"]:
                self.model = obj["model"]
        elif t == "entry":
            for e in logged_entries(obj):
                self._entry(e)
        elif t == "history":
            self._history(obj)
        elif t == "event":
            ev = logged_event(obj)
            if ev is not None:
                self._event(ev, obj)

    def _message(self, e: dict) -> Message | None:
        msg = e.get("message")
        kind = e.get("kind", "message")
        if not isinstance(msg, dict) or kind in NOT_SENT:
            return None
        role = msg.get("role") if msg.get("role") in ("user", "assistant") else "user"
        blocks = as_blocks(msg.get("content"))
        uses = [b for b in blocks if b.get("type") == "tool_use"]
        for b in uses:
            self.calls[str(b.get("id"))] = b.get("input")
        results = [b for b in blocks if b.get("type") == "tool_result"]
        if role == "assistant":
            mkind = "assistant"
        elif kind != "message":
            mkind = KIND_OF_ENTRY.get(kind, "other")
        else:
            mkind = "tool_result" if results else "prompt"
        files = [f for b in uses for f in call_files(b.get("input"))]
        files += [f for b in results for f in call_files(self.calls.get(str(b.get("tool_use_id"))))]
        text = "\n".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
        return Message(role=role, kind=mkind, tokens=estimate_message({"content": blocks}), key=content_key(blocks),
                       text=text, tools=unique(str(b.get("name", "")) for b in uses), files=unique(files),
                       references=unique(r for b in uses for r in call_references(b.get("input"))),
                       timestamp=parse_timestamp(e.get("timestamp")), blocks=blocks)

    def _entry(self, e: dict) -> None:
        uuid = str(e.get("uuid"))
        m = self._message(e)
        if m is None:
            return
        known = uuid in self.messages
        self.messages[uuid] = m
        if known:
            return                     # re-logged in place: the content a later request sends
        self.working.append(uuid)
        usage, rid = e.get("usage"), e.get("response_id")
        if m.role == "assistant" and isinstance(usage, dict) and rid and rid not in self.seen:
            self.seen.add(str(rid))
            meta = e.get("meta") if isinstance(e.get("meta"), dict) else {}
            model = meta.get("model") if isinstance(meta.get("model"), str) and meta.get("model") else self.model
            ts = m.timestamp if m.timestamp is not None else (self.requests[-1].timestamp if self.requests else 0.0)
            self.requests.append(Request(
                index=len(self.requests), timestamp=ts, model=model,
                added=([self.previous] if self.previous is not None and self.after is None else []) + self.pending,
                response=m, usage=buckets_of(usage), compaction_before=self.compaction,
                context_after_compaction=self.after))
            self.previous, self.pending, self.after, self.compaction = m, [], None, None
        else:
            self.pending.append(m)

    def _history(self, obj: dict) -> None:
        for e in logged_entries(obj):
            m = self._message(e)
            if m is not None:
                self.messages[str(e.get("uuid"))] = m
        uuids = obj.get("uuids")
        if not isinstance(uuids, list):
            raise ValueError("history without uuids")
        self.working = [str(u) for u in uuids if str(u) in self.messages]
        self.after = [self.messages[u] for u in self.working]
        self.pending, self.previous = [], None
        if self.compaction is None:
            self.compaction = RecordedCompaction("unknown", None, None, timestamp=parse_timestamp(obj.get("at")))

    def _event(self, ev: dict, line: dict) -> None:
        kind = ev.get("type")
        if kind == "compaction":
            before = _int(ev.get("tokens_before"))
            first = self.compaction if self.compaction is not None and self.compaction.trigger != "unknown" else None
            self.compaction = RecordedCompaction(
                trigger=str(ev.get("trigger") or "unknown"),
                tokens_before=first.tokens_before if first is not None else before,
                summary_tokens=None, layer=str(ev.get("layer") or "compact"), timestamp=parse_timestamp(line.get("at")))
        elif kind == "model_call" and isinstance(ev.get("usage"), dict) and ev.get("purpose") not in (None, "main"):
            ts = parse_timestamp(line.get("at")) or 0.0
            model = ev.get("model") if isinstance(ev.get("model"), str) and ev.get("model") else self.model
            empty = Message(role="assistant", kind="assistant", tokens=0, key=str(ev.get("message_id")))
            self.side.append(Request(index=len(self.side), timestamp=ts, model=model, added=[], response=empty,
                                     usage=buckets_of(ev["usage"]), purpose=str(ev.get("purpose"))))

    def finish(self) -> Trajectory:
        overhead, warm = overhead_of(self.requests)
        traj = Trajectory(path=self.path, session_id=self.session_id, model=self.model, overhead_tokens=overhead,
                          requests=self.requests, source="ctxtui", compaction_calls=self.side,
                          head_cached_tokens=warm)
        calibrate(traj)
        return traj
