"""Claude Code session logs written by hand for the tests, in the shape Claude Code writes them
(described in agent_core/logs/claude_code.py), and reading them back."""
from __future__ import annotations

import json
from pathlib import Path

from agent_core.logs import Deduper, LogReader, UsageRecord

MODEL = "claude-sonnet-4-5-20250929"


def usage(inp=100, out=20, write=0, read=0, w1h=0):
    u = {"input_tokens": inp, "output_tokens": out, "cache_creation_input_tokens": write + w1h,
         "cache_read_input_tokens": read}
    if w1h:
        u["cache_creation"] = {"ephemeral_5m_input_tokens": write, "ephemeral_1h_input_tokens": w1h}
    return u


def assistant(mid, rid="req", *, u=None, model=MODEL, session="sess-1", ts="2025-06-14T10:00:00Z",
              sidechain=False, block="text", uuid=None, **extra):
    content = {"text": [{"type": "text", "text": "ok"}],
               "tool_use": [{"type": "tool_use", "id": f"tu-{mid}", "name": "Read", "input": {}}],
               "thinking": [{"type": "thinking", "thinking": "hmm"}]}[block]
    rec = {"type": "assistant", "parentUuid": None, "isSidechain": sidechain, "sessionId": session,
           "uuid": uuid or f"{mid}-{block}", "timestamp": ts, "requestId": rid,
           "message": {"id": mid, "type": "message", "role": "assistant", "model": model, "content": content,
                       "stop_reason": None, "usage": u if u is not None else usage()}}
    rec.update(extra)
    return rec


def progress(inner: dict, *, agent="a1", session="sess-1", ts="2025-06-14T10:00:01Z", uuid="p1"):
    """A running sub-agent's response as Claude Code also writes it into the main log."""
    return {"type": "progress", "isSidechain": False, "sessionId": session, "uuid": uuid, "timestamp": ts,
            "data": {"type": "agent_progress", "agentId": agent, "prompt": "look around",
                     "message": {k: v for k, v in inner.items() if k not in ("isSidechain", "sessionId")}},
            "toolUseID": f"agent_{inner['message']['id']}", "parentToolUseID": "toolu_parent"}


def user(text="hi", *, session="sess-1", ts="2025-06-14T10:00:00Z", uuid="u", **extra):
    rec = {"type": "user", "isSidechain": False, "sessionId": session, "uuid": uuid, "timestamp": ts,
           "message": {"role": "user", "content": text}}
    rec.update(extra)
    return rec


def boundary(pre, trigger="auto", *, session="sess-1", ts="2025-06-14T11:00:00Z", uuid="b1"):
    return {"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted",
            "isSidechain": False, "sessionId": session, "uuid": uuid, "timestamp": ts, "level": "info",
            "compactMetadata": {"trigger": trigger, "preTokens": pre}}


def write_log(path: Path, records, tail: str = "") -> Path:
    """One JSON object per line; `tail` is raw text appended as is (corrupt or cut-off lines)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for r in records:
            f.write((r if isinstance(r, str) else json.dumps(r)) + "\n")
        f.write(tail)
    return path


def read_all(*paths: Path):
    dedup = Deduper()
    out = []
    for p in paths:
        out.extend(LogReader(p, dedup=dedup).records(final=True))
    return out


def usages(records):
    return [r for r in records if isinstance(r, UsageRecord)]
