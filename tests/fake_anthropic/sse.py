"""The Messages API's streaming event sequence for one answer, and its non-streaming body."""
from __future__ import annotations

import json
from typing import Any

Event = tuple[str, dict]


def _chunks(s: str, n: int) -> list[str]:
    n = max(1, n)
    return [s[i:i + n] for i in range(0, len(s), n)] or [""]


def _copy(v: Any) -> Any:
    """A dict copied; anything else (a hostile usage override, e.g. a string) sent as it is."""
    return dict(v) if isinstance(v, dict) else v


def start_usage(u: dict) -> dict:
    return {
        "input_tokens": u["input_tokens"],
        "cache_creation_input_tokens": u["cache_creation_input_tokens"],
        "cache_read_input_tokens": u["cache_read_input_tokens"],
        "cache_creation": _copy(u["cache_creation"]),
        "output_tokens": 1,
        "service_tier": "standard",
    }


def delta_usage(u: dict) -> dict:
    # message_delta carries cumulative totals (the SDK overwrites, not adds).
    out = {
        "input_tokens": u["input_tokens"],
        "cache_creation_input_tokens": u["cache_creation_input_tokens"],
        "cache_read_input_tokens": u["cache_read_input_tokens"],
        "output_tokens": u["output_tokens"],
    }
    if u.get("iterations") is not None:        # per-step usage (server compaction)
        out["iterations"] = u["iterations"]
    return out


def message_events(*, msg_id: str, model: str, content: list[dict], usage: dict, stop_reason: str,
                   chunk: int = 16, context_management: Any = None) -> list[Event]:
    events: list[Event] = [("message_start", {"type": "message_start", "message": {
        "id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": start_usage(usage)}}),
        ("ping", {"type": "ping"})]
    for idx, b in enumerate(content):
        t = b["type"]
        if t == "text":
            events.append(("content_block_start", {"type": "content_block_start", "index": idx,
                                                   "content_block": {"type": "text", "text": ""}}))
            for part in _chunks(b["text"], chunk):
                events.append(("content_block_delta", {"type": "content_block_delta", "index": idx,
                                                       "delta": {"type": "text_delta", "text": part}}))
        elif t == "thinking":
            events.append(("content_block_start", {"type": "content_block_start", "index": idx,
                                                   "content_block": {"type": "thinking", "thinking": "",
                                                                     "signature": ""}}))
            for part in _chunks(b["thinking"], chunk):
                events.append(("content_block_delta", {"type": "content_block_delta", "index": idx,
                                                       "delta": {"type": "thinking_delta", "thinking": part}}))
            events.append(("content_block_delta", {"type": "content_block_delta", "index": idx,
                                                   "delta": {"type": "signature_delta",
                                                             "signature": b.get("signature", "")}}))
        elif t == "compaction":
            # The block opens empty but for its signature; one delta carries the summary and the
            # opaque content (the SDK replaces, not appends, on a compaction delta).
            start = {k: (None if k in ("content", "encrypted_content") else v) for k, v in b.items()}
            events.append(("content_block_start", {"type": "content_block_start", "index": idx,
                                                   "content_block": start}))
            if b.get("content") is not None:
                events.append(("content_block_delta", {"type": "content_block_delta", "index": idx, "delta": {
                    "type": "compaction_delta", "content": b["content"],
                    "encrypted_content": b.get("encrypted_content")}}))
        elif t == "redacted_thinking":
            events.append(("content_block_start", {"type": "content_block_start", "index": idx,
                                                   "content_block": {"type": "redacted_thinking",
                                                                     "data": b.get("data", "")}}))
        elif t == "tool_use":
            events.append(("content_block_start", {"type": "content_block_start", "index": idx,
                                                   "content_block": {"type": "tool_use", "id": b["id"],
                                                                     "name": b["name"], "input": {}}}))
            raw = json.dumps(b.get("input") or {}, separators=(",", ":"))
            for part in [""] + _chunks(raw, chunk):
                events.append(("content_block_delta", {"type": "content_block_delta", "index": idx,
                                                       "delta": {"type": "input_json_delta",
                                                                 "partial_json": part}}))
        else:
            raise ValueError(f"fake_anthropic cannot stream a {t!r} block")
        events.append(("content_block_stop", {"type": "content_block_stop", "index": idx}))
    delta: dict = {"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                   "usage": delta_usage(usage)}
    if context_management is not None:
        delta["context_management"] = context_management
    events.append(("message_delta", delta))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def encode(name: str, data: dict) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def message_body(*, msg_id: str, model: str, content: list[dict], usage: dict, stop_reason: str,
                 context_management: Any = None) -> dict:
    out = {"id": msg_id, "type": "message", "role": "assistant", "model": model, "content": content,
           "stop_reason": stop_reason, "stop_sequence": None,
           "usage": {**delta_usage(usage), "cache_creation": _copy(usage["cache_creation"]),
                     "service_tier": "standard"}}
    if context_management is not None:
        out["context_management"] = context_management
    return out
