"""Claude Code log records -> trajectories (one per agent: the main chain, each sub-agent).

How a Claude Code log maps onto requests (checked on the real 2.1 logs in the shared reference):
- one response is one `assistant` record per content block, all with the same `message.id` +
  `requestId` (`claude_code.response_key`) and the same usage except the last copy's final
  output count: a request is one key, its usage the last copy's;
- blocks of one response can interleave with the `user` records of their tool results (parallel
  tool calls): the results belong to the next request;
- a request's `added` is the previous response, then every user record since (tool results,
  prompts, attachments, Claude Code's own notices); `<synthetic>` responses are not API calls;
- `compact_boundary` (then the `isCompactSummary` user record) resets the context: the next
  request carries `compaction_before` and `context_after_compaction` (the summary); a boundary
  that kept the turn in progress verbatim after the summary (2.1.328's `preservedSegment`: the
  last answer and the tool results since) leaves that answer and those results in the next
  request's `added`, so the policies still see them (older boundaries drop them); the
  `attachment` records between a boundary and the next response that carry the text sent
  (`rendered`, 2.1.328: the files re-attached, notes on those too large, reminders) join the
  summary in `context_after_compaction` — the log's own context, which no policy replays — so
  calibration does not size the summary or the kept turn with them; other attachments are left out
  (their tokens are measured into the messages around them, as before);
- the last `cost-state` record (2.1.328 on: what the session spent, per model, its compaction calls
  included, which have no assistant record) is the main trajectory's `cost_state` (cost_state.py);
- the overhead (tools + system prompt) is the cache read of the first request after a compaction
  when the log has one (only the head survives a compaction, and Claude Code marks the system
  prompt's end with a breakpoint), else the first request's cache read (the head shared with
  earlier sessions), else the first request's total less its messages' estimates.
"""
from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from compaction.estimate import estimate_message

from agent_core.logs.claude_code import (compact_metadata, is_compact_boundary, is_compact_summary, parse_timestamp,
                                         response_key)
from agent_core.logs.cost_state import COST_STATE, CostState, cost_state_of
from agent_core.logs.records import buckets_of
from agent_core.logs.trajectory import Message, RecordedCompaction, Request, Trajectory
from agent_core.logs.trajectory_refs import call_files, call_references, unique
from agent_core.logs.trajectory_sizes import calibrate, input_total
from agent_core.pricing.cost import FREE_MODELS

NOTICE_PREFIXES = ("[Request interrupted", "<local-command-", "<task-notification>")   # Claude Code's, not the user's


def content_key(content: Any) -> str:
    """Equal content, equal key (what the prompt cache compares)."""
    raw = json.dumps(content, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.blake2b(raw.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


def as_blocks(content: Any) -> list[dict]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


def text_of(blocks: list[dict]) -> str:
    """What references are searched in: the text, tool inputs and tool results of `blocks`."""
    parts = []
    for b in blocks:
        t = b.get("type")
        if t == "text":
            parts.append(str(b.get("text", "")))
        elif t == "tool_use":
            parts.append(json.dumps(b.get("input", {}), default=str))
        elif t == "tool_result":
            c = b.get("content", "")
            parts.append(c if isinstance(c, str) else text_of(as_blocks(c)))
    return "\n".join(parts)


@dataclass
class _Response:
    key: str
    model: str
    timestamp: float | None
    usage: dict[str, int]
    blocks: list[dict] = field(default_factory=list)


@dataclass
class ClaudeCodeChain:
    """The records of one agent in one file, kept in order; `requests()` builds the trajectory's
    requests once the file is read."""
    agent_id: str | None = None
    session_id: str | None = None
    events: list[tuple[str, Any]] = field(default_factory=list)
    responses: dict[str, _Response] = field(default_factory=dict)
    calls: dict[str, tuple[str, Any]] = field(default_factory=dict)   # tool_use id -> (name, input)
    last_ts: float | None = None
    cost_state: CostState | None = None                               # the last cost-state record read

    def feed(self, obj: dict) -> None:
        """One record (a `CorruptRecord` from `buckets_of` propagates: the caller counts it)."""
        if self.session_id is None and isinstance(obj.get("sessionId"), str):
            self.session_id = obj["sessionId"]
        kind = obj.get("type")
        if kind == "assistant":
            self._assistant(obj)
        elif kind == "user":
            self._user(obj)
        elif kind == COST_STATE:
            self.cost_state = cost_state_of(obj) or self.cost_state
        elif kind == "attachment":
            self._attachment(obj)
        elif is_compact_boundary(obj):
            meta = compact_metadata(obj)
            pre = meta.get("preTokens")
            self.events.append(("boundary", RecordedCompaction(
                trigger=str(meta.get("trigger") or "unknown"),
                tokens_before=pre if isinstance(pre, int) and not isinstance(pre, bool) else None,
                summary_tokens=None, timestamp=parse_timestamp(obj.get("timestamp")),
                preserved=bool(meta.get("preservedSegment") or meta.get("preservedMessages")))))

    def _assistant(self, obj: dict) -> None:
        msg = obj.get("message")
        if not isinstance(msg, dict) or not isinstance(msg.get("usage"), dict):
            return
        model = msg.get("model")
        model = model if isinstance(model, str) and model else "unknown"
        if model in FREE_MODELS:
            return
        usage = buckets_of(msg["usage"])
        key = response_key(obj)
        ts = parse_timestamp(obj.get("timestamp"))
        resp = self.responses.get(key)
        if resp is None:
            resp = self.responses[key] = _Response(key, model, ts if ts is not None else self.last_ts, usage)
            self.events.append(("response", key))
        resp.usage = usage                     # the last copy holds the final output count
        for b in as_blocks(msg.get("content")):
            resp.blocks.append(b)
            if b.get("type") == "tool_use" and isinstance(b.get("id"), str):
                self.calls[b["id"]] = (str(b.get("name", "")), b.get("input"))
        self.last_ts = ts if ts is not None else self.last_ts

    def _user(self, obj: dict) -> None:
        msg = obj.get("message")
        if not isinstance(msg, dict):
            return
        content = msg.get("content")
        blocks = as_blocks(content)
        ts = parse_timestamp(obj.get("timestamp"))
        tools: list[str] = []
        files: list[str] = []
        results = [b for b in blocks if b.get("type") == "tool_result"]
        if is_compact_summary(obj):
            kind = "summary"
        elif results:
            kind = "tool_result"
            for b in results:
                name, tool_input = self.calls.get(str(b.get("tool_use_id")), ("", None))
                tools.append(name)
                files += call_files(tool_input)
        elif obj.get("isMeta"):
            kind = "attachment"
        else:
            text = text_of(blocks).lstrip()
            kind = "other" if text.startswith(NOTICE_PREFIXES) else "prompt"
        m = Message(role="user", kind=kind, tokens=estimate_message({"content": blocks}), key=content_key(blocks),
                    text=text_of(blocks), tools=unique(t for t in tools if t), files=unique(files), timestamp=ts,
                    blocks=blocks)
        self.events.append(("user", m))

    def _attachment(self, obj: dict) -> None:
        """An `attachment` record with the text Claude Code sent for it (`rendered`, 2.1.328): a
        re-attached file, a note on one too large, a reminder. Only those after a compaction are
        kept (requests())."""
        rendered = obj.get("rendered")
        texts = [r["content"] for r in rendered if isinstance(r, dict) and isinstance(r.get("content"), str)] \
            if isinstance(rendered, list) else []
        if not texts:
            return
        blocks = [{"type": "text", "text": t} for t in texts]
        self.events.append(("attachment", Message(
            role="user", kind="attachment", tokens=estimate_message({"content": blocks}), key=content_key(blocks),
            text=text_of(blocks), timestamp=parse_timestamp(obj.get("timestamp")), blocks=blocks)))

    def _response_message(self, resp: _Response) -> Message:
        uses = [b for b in resp.blocks if b.get("type") == "tool_use"]
        return Message(
            role="assistant", kind="assistant", tokens=estimate_message({"content": resp.blocks}),
            key=content_key(resp.blocks), text=text_of(resp.blocks),
            tools=unique(str(b.get("name", "")) for b in uses),
            files=unique(f for b in uses for f in call_files(b.get("input"))),
            references=unique(r for b in uses for r in call_references(b.get("input"))),
            timestamp=resp.timestamp, blocks=resp.blocks)

    def requests(self, purpose: str) -> list[Request]:
        out: list[Request] = []
        pending: list[Message] = []
        previous: Message | None = None
        compaction: RecordedCompaction | None = None
        after: list[Message] | None = None
        last_ts = 0.0
        for kind, value in self.events:
            if kind == "boundary" or (kind == "user" and value.kind == "summary" and compaction is None):
                compaction = value if kind == "boundary" else RecordedCompaction("unknown", None, None,
                                                                                  timestamp=value.timestamp)
                after = []
                if not compaction.preserved:
                    pending, previous = [], None
                if kind == "boundary":
                    continue
            if kind == "attachment":         # what Claude Code re-attached after a compaction: its own
                if after is not None:
                    after.append(value)
                continue
            if kind == "user":
                if value.kind == "summary" and after is not None and not any(m.kind == "summary" for m in after):
                    after.append(value)
                else:
                    pending.append(value)
                continue
            resp = self.responses[value]
            msg = self._response_message(resp)
            ts = resp.timestamp if resp.timestamp is not None else last_ts
            last_ts = ts
            out.append(Request(
                index=len(out), timestamp=ts, model=resp.model,
                added=([previous] if previous is not None else []) + pending, response=msg, usage=resp.usage,
                compaction_before=compaction, context_after_compaction=after if compaction is not None else None,
                purpose=purpose))
            previous, pending, compaction, after = msg, [], None, None
        return out


def overhead_of(requests: list[Request]) -> tuple[int, int]:
    """(overhead tokens, the part of it warm at the first request): see the module doc."""
    if not requests:
        return 0, 0
    first = requests[0]
    warm = first.usage.get("cache_read", 0)
    head = None
    for r in requests:
        read = r.usage.get("cache_read", 0)
        if r.compaction_before is not None and 0 < read < input_total(r.usage):
            head = read
            break
    if head is None:
        head = warm if warm > 0 else max(0, input_total(first.usage) - sum(m.tokens for m in first.added))
    return head, min(warm, head)


def build_trajectory(chain: ClaudeCodeChain, path: str, fallback_session: str, skipped: int = 0) -> Trajectory:
    """The trajectory of one chain, its messages sized from the logged usage."""
    agent = chain.agent_id
    purpose = "main" if agent is None else ("compaction" if agent.startswith("acompact") else "subagent")
    requests = chain.requests(purpose)
    models = Counter(r.model for r in requests)
    overhead, warm = overhead_of(requests)
    traj = Trajectory(path=path, session_id=chain.session_id or fallback_session,
                      model=models.most_common(1)[0][0] if models else "unknown", overhead_tokens=overhead,
                      requests=requests, agent_id=agent, skipped_lines=skipped, source="claude_code",
                      head_cached_tokens=warm, cost_state=chain.cost_state if agent is None else None)
    calibrate(traj)
    return traj


def attach_compaction_calls(main: Trajectory, calls: list[Trajectory]) -> None:
    """Claude Code's compaction sub-agent is the log's own summary call: its requests become the
    main trajectory's `compaction_calls`, and the output of each sizes the recorded compaction
    nearest in time. That log holds only the first streamed copy of the summary (its output count
    is partial: 6 tokens for a 14 KB summary in the real logs), so the summary's size is the larger
    of the logged output and the estimate of its text, and the call's output bucket says so too."""
    recorded = [r.compaction_before for r in main.requests if r.compaction_before is not None]
    for traj in calls:
        for req in traj.requests:
            req.purpose = "compaction"
            req.usage = {**req.usage, "output": max(req.usage.get("output", 0), req.response.tokens)}
            main.compaction_calls.append(req)
            if not recorded:
                continue
            best = min(recorded, key=lambda c: abs((c.timestamp or 0.0) - req.timestamp))
            best.summary_tokens = req.usage["output"]
    main.compaction_calls.sort(key=lambda r: r.timestamp)
