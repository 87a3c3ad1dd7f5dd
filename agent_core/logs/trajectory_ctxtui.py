"""ctxtui session log records -> one trajectory.

The records are read with the session reader's helpers (`logged_entries`, `logged_event`), the
one reader of this format. An assistant entry with a response id and usage is a request. Each
request carries two views of its context:
- `added`: the messages first logged since the previous request (the previous answer, tool
  results, the next prompt), as first logged — what the replay policies, which undo the log's own
  compactions, build their contexts from;
- `sent`: what the request held — the working history as the last `history` record (any layer
  rewrote it) left it, with the collapse spans the pipeline state holds replaced by their digests
  (collapse is a projection: it never rewrites the history). A span is committed in the pipeline
  run before a request but logged in the state change written after it, so a request's view is
  drawn once the next state change, history record, compaction or request is read.
`compaction` events logged since the previous request are its `compaction_before`. `model_call`
events of other purposes (summary, memory) are the log's own side calls (`compaction_calls`).
The meta record's config (the session's window, its 1M setting) is `logged_config`.
"""
from __future__ import annotations

from typing import Any

from compaction.entry import NOT_SENT
from compaction.estimate import estimate_message

from agent_core.logs.claude_code import parse_timestamp
from agent_core.logs.records import CorruptRecord, buckets_of
from agent_core.logs.trajectory import Message, RecordedCompaction, Request, Trajectory
from agent_core.logs.trajectory_claude_code import as_blocks, content_key, text_of
from agent_core.logs.trajectory_refs import call_files, call_references, unique
from agent_core.logs.trajectory_sizes import calibrate, input_total
from agent_core.sessions.log_records import logged_entries, logged_event
from agent_core.sessions.state_delta import apply_op

KIND_OF_ENTRY = {"summary": "summary", "attachment": "attachment", "snip_marker": "other"}


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def collapse_spans(pipeline: Any) -> list[dict]:
    """The committed collapse spans of a logged pipeline state (malformed ones left out)."""
    layers = pipeline.get("layers") if isinstance(pipeline, dict) else None
    collapse = layers.get("collapse") if isinstance(layers, dict) else None
    spans = collapse.get("spans") if isinstance(collapse, dict) else None
    if not isinstance(spans, list):
        return []
    return [sp for sp in spans if isinstance(sp, dict) and isinstance(sp.get("first"), str)
            and isinstance(sp.get("last"), str) and isinstance(sp.get("digest"), str)]


def digest_message(span: dict) -> Message:
    """A collapse span's digest as the request held it (compaction/layers/collapse.digest_entry)."""
    blocks = [{"type": "text", "text": span["digest"]}]
    return Message(role="user", kind="summary", tokens=estimate_message({"content": blocks}),
                   key=content_key(blocks), text=span["digest"], blocks=blocks)


def collapsed(uuids: list[str], messages: list[Message], spans: list[dict],
              digests: dict[tuple[str, str], Message]) -> list[Message]:
    """`messages` (one per uuid) with each span found whole in them replaced by its digest, the
    earlier of two overlapping spans kept (as collapse.py locates them). `digests` keeps one
    message per digest, so a span every later request holds is sized once (trajectory_sizes.py)."""
    if not spans:
        return messages
    at = {u: i for i, u in enumerate(uuids)}
    found = sorted(((at[sp["first"]], at[sp["last"]] + 1, sp) for sp in spans
                    if sp["first"] in at and sp["last"] in at and at[sp["first"]] <= at[sp["last"]]),
                   key=lambda x: (x[0], x[1]))
    out: list[Message] = []
    pos = 0
    for a, b, sp in found:
        if a < pos:
            continue
        out += messages[pos:a]
        key = (sp["first"], sp["digest"])
        if key not in digests:
            digests[key] = digest_message(sp)
        out.append(digests[key])
        pos = b
    return out + messages[pos:]


class CtxtuiBuilder:
    def __init__(self, path: str, fallback_session: str) -> None:
        self.path = path
        self.session_id = fallback_session
        self.model = "unknown"
        self.config: dict | None = None
        self.bad = 0
        self.messages: dict[str, Message] = {}       # entry uuid -> its message as the history holds it now
        self.raw: dict[str, Message] = {}            # entry uuid -> its message as its `entry` line logged it
        self.working: list[str] = []                 # the working history, as uuids
        self.calls: dict[str, Any] = {}              # tool_use id -> input
        self.requests: list[Request] = []
        self.side: list[Request] = []
        self.pending: list[str] = []                 # uuids first logged since the previous request
        self.previous: str | None = None             # the previous response's uuid
        self.compaction: RecordedCompaction | None = None
        self.seen: set[str] = set()
        self.pipeline: Any = None                    # the logged pipeline state (for collapse's spans)
        self.unviewed: list[tuple[Request, list[str]]] = []   # requests whose `sent` awaits the spans
        self.digests: dict[tuple[str, str], Message] = {}       # collapse digests as requests held them

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
            if isinstance(obj.get("config"), dict):
                self.config = obj["config"]
        elif t == "entry":
            for e in logged_entries(obj):
                self._entry(e)
        elif t == "history":
            self._view()
            self._history(obj)
        elif t == "event":
            ev = logged_event(obj)
            if ev is not None:
                self._event(ev, obj)
        elif t == "state":
            if isinstance(obj.get("pipeline"), dict):
                self.pipeline = obj["pipeline"]
            self._view()
        elif t == "delta":
            self._delta(obj.get("ops"))
            self._view()

    def _delta(self, ops: Any) -> None:
        """Apply the pipeline's share of a state change; a change that does not apply leaves the
        state as it was (the spans may then lag: counted as a bad line)."""
        if not isinstance(ops, list):
            return
        state = {"pipeline": self.pipeline}
        for op in ops:
            if isinstance(op, list) and len(op) > 1 and isinstance(op[1], list) and op[1][:1] == ["pipeline"]:
                try:
                    apply_op(state, op)
                except ValueError:
                    self.bad += 1
        self.pipeline = state["pipeline"]

    def _view(self) -> None:
        """Draw the `sent` of the requests waiting for the spans (module doc)."""
        if not self.unviewed:
            return
        spans = collapse_spans(self.pipeline)
        for req, uuids in self.unviewed:
            req.sent = collapsed(uuids, req.sent or [], spans, self.digests)
        self.unviewed = []

    def _message(self, e: dict) -> Message | None:
        msg = e.get("message")
        kind = e.get("kind", "message")
        if not isinstance(msg, dict) or kind in NOT_SENT:
            return None
        role = "assistant" if msg.get("role") == "assistant" else "user"
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
        results_tools = [self.calls.get(str(b.get("tool_use_id"))) for b in results]
        files += [f for inp in results_tools for f in call_files(inp)]
        return Message(role=role, kind=mkind, tokens=estimate_message({"content": blocks}), key=content_key(blocks),
                       text=text_of(blocks), tools=unique(str(b.get("name", "")) for b in uses), files=unique(files),
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
            if uuid in self.pending or uuid == self.previous:
                self.raw[uuid] = m     # not sent yet in this version: the one the next request adds
            return                     # re-logged in place: the content a later request sends
        self.raw[uuid] = m
        self.working.append(uuid)
        usage, rid = e.get("usage"), e.get("response_id")
        if m.role == "assistant" and isinstance(usage, dict) and rid and rid not in self.seen:
            self._view()
            self.seen.add(str(rid))
            meta = e.get("meta")
            model = meta.get("model") if isinstance(meta, dict) else None
            model = model if isinstance(model, str) and model else self.model
            ts = m.timestamp if m.timestamp is not None else (self.requests[-1].timestamp if self.requests else 0.0)
            added = [self.raw[u] for u in ([self.previous] if self.previous else []) + self.pending]
            uuids = self.working[:-1]                        # the history the request was sent with
            req = Request(index=len(self.requests), timestamp=ts, model=model, added=added, response=m,
                          usage=buckets_of(usage), compaction_before=self.compaction,
                          sent=[self.messages[u] for u in uuids])
            self.requests.append(req)
            self.unviewed.append((req, uuids))
            self.previous, self.pending, self.compaction = uuid, [], None
        else:
            self.pending.append(uuid)

    def _history(self, obj: dict) -> None:
        for e in logged_entries(obj):
            m = self._message(e)
            if m is not None:
                self.messages[str(e.get("uuid"))] = m
        uuids = obj.get("uuids")
        if not isinstance(uuids, list):
            raise ValueError("history without uuids")
        self.working = [str(u) for u in uuids if str(u) in self.messages]
        if self.compaction is None:
            self.compaction = RecordedCompaction("unknown", None, None, timestamp=parse_timestamp(obj.get("at")))

    def _event(self, ev: dict, line: dict) -> None:
        kind = ev.get("type")
        if kind == "compaction":
            self._view()
            before = _int(ev.get("tokens_before"))
            first = self.compaction if self.compaction is not None and self.compaction.trigger != "unknown" else None
            self.compaction = RecordedCompaction(
                trigger=str(ev.get("trigger") or "unknown"),
                tokens_before=first.tokens_before if first is not None else before,
                summary_tokens=None, layer=str(ev.get("layer") or "compact"), timestamp=parse_timestamp(line.get("at")))
        elif kind == "model_call" and isinstance(ev.get("usage"), dict) and ev.get("purpose") not in (None, "main"):
            ts = parse_timestamp(line.get("at")) or 0.0
            model = ev.get("model")
            model = model if isinstance(model, str) and model else self.model
            empty = Message(role="assistant", kind="assistant", tokens=0, key=str(ev.get("message_id")))
            self.side.append(Request(index=len(self.side), timestamp=ts, model=model, added=[], response=empty,
                                     usage=buckets_of(ev["usage"]), purpose=str(ev.get("purpose"))))

    def finish(self) -> Trajectory:
        self._view()
        overhead = overhead_of(self.requests)
        traj = Trajectory(path=self.path, session_id=self.session_id, model=self.model, overhead_tokens=overhead,
                          requests=self.requests, source="ctxtui", compaction_calls=self.side,
                          logged_config=self.config)
        calibrate(traj)
        return traj


def overhead_of(requests: list[Request]) -> int:
    """The head (tools and system prompt): the first request's input less the estimate of what it
    sent (one prompt, at a session's start). A ctxtui log has no head warm from another session."""
    if not requests:
        return 0
    first = requests[0]
    return max(0, input_total(first.usage) - sum(m.tokens for m in first.sent or first.added))
