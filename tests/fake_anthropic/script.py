"""What the fake server answers: scripted replies and faults, as plain JSON-able dicts.

A script is a queue; each POST /v1/messages takes the next item (count_tokens never does).
When it is empty a responder `callable(request_body) -> item` answers, so long sessions can be
driven. Items are the same in Python and in a `--script FILE` JSON file:

  reply:  {"content": [blocks], "stop_reason"?: str, "chunk"?: int, "delay"?: float,
           "usage"?: {overrides}, "id"?: str, "compaction_fails"?: bool}
          (`compaction_fails`: when the request's compact_20260112 edit triggers, the server's
          compaction fails and returns a compaction block with null content; see context_management.py)
          "context_management"?: any — sent as the answer's `context_management` exactly as given,
          whatever the request asked for (a hostile or broken server: a string, a list, NaN counts);
          "usage" overrides go out as given too, e.g. {"iterations": "junk"} or NaN (JSON `NaN`)
          blocks: {"type": "text", "text"} | {"type": "thinking", "thinking", "signature"?}
                  | {"type": "tool_use", "name", "input", "id"?}
  fault:  {"fault": kind, ...}  kinds in FAULTS below.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any, Callable

Item = dict
Responder = Callable[[dict], "Item | str"]

# kind -> what the server does
FAULTS = {
    "rate_limit": "HTTP 429 rate_limit_error with retry-after (default 0.01 s)",
    "overloaded": "HTTP 529 overloaded_error with retry-after (default 0.01 s)",
    "server_error": "HTTP 500 api_error (retry-after only if `retry_after` is given)",
    "prompt_too_long": "HTTP 400 `prompt is too long: N tokens > M maximum` (N from the request)",
    "auth": "HTTP 401 authentication_error",
    "bad_request": "HTTP 400 invalid_request_error with `message`",
    "cut": "stream `after_events` SSE events of `reply` then close the connection mid-body",
    "truncate": "stream `after_events` events of `reply`, then end the body cleanly (no message_stop)",
    "malformed": "stream `after_events` events of `reply`, then a data line that is not JSON",
    "stream_error": "stream `after_events` events, then an SSE `error` event (`error_type`, default overloaded_error)",
}
STATUS_FAULTS = {"rate_limit", "overloaded", "server_error", "prompt_too_long", "auth", "bad_request"}
STREAM_FAULTS = {"cut", "truncate", "malformed", "stream_error"}


def text(s: str) -> dict:
    return {"type": "text", "text": s}


def thinking(s: str, signature: str | None = None) -> dict:
    sig = signature or "sig-" + hashlib.sha256(s.encode()).hexdigest()[:16]
    return {"type": "thinking", "thinking": s, "signature": sig}


def tool_use(name: str, input: dict | None = None, id: str | None = None) -> dict:
    b: dict[str, Any] = {"type": "tool_use", "name": name, "input": dict(input or {})}
    if id:
        b["id"] = id
    return b


_UNSET: Any = object()


def reply(*blocks: dict | str, stop_reason: str | None = None, chunk: int | None = None,
          delay: float | None = None, usage: dict | None = None, id: str | None = None,
          context_management: Any = _UNSET) -> Item:
    """A model answer; plain strings become text blocks. `chunk` = characters per delta,
    `delay` = seconds between SSE events (for cancellation and kill tests). `context_management`,
    when given (None included), replaces what the server reports of its edits, as it is."""
    item: dict[str, Any] = {"content": [text(b) if isinstance(b, str) else dict(b) for b in blocks]}
    for k, v in (("stop_reason", stop_reason), ("chunk", chunk), ("delay", delay), ("usage", usage), ("id", id)):
        if v is not None:
            item[k] = v
    if context_management is not _UNSET:
        item["context_management"] = context_management
    return item


def fault(kind: str, **kw: Any) -> Item:
    if kind not in FAULTS:
        raise ValueError(f"unknown fault {kind!r}; expected one of {sorted(FAULTS)}")
    return {"fault": kind, **kw}


def rate_limit(retry_after: float = 0.01) -> Item:
    return fault("rate_limit", retry_after=retry_after)


def overloaded(retry_after: float = 0.01) -> Item:
    return fault("overloaded", retry_after=retry_after)


def server_error(retry_after: float | None = None) -> Item:
    return fault("server_error", **({"retry_after": retry_after} if retry_after is not None else {}))


def prompt_too_long(tokens: int | None = None, maximum: int | None = None) -> Item:
    kw: dict[str, Any] = {}
    if tokens is not None:
        kw["tokens"] = tokens
    if maximum is not None:
        kw["maximum"] = maximum
    return fault("prompt_too_long", **kw)


def cut(after_events: int = 3, reply_item: Item | None = None) -> Item:
    return fault("cut", after_events=after_events, **({"reply": reply_item} if reply_item else {}))


def malformed(after_events: int = 2, reply_item: Item | None = None) -> Item:
    return fault("malformed", after_events=after_events, **({"reply": reply_item} if reply_item else {}))


def as_item(x: Item | str) -> Item:
    """Accept a bare string as a one-text reply."""
    return reply(x) if isinstance(x, str) else x


def last_user_text(body: dict) -> str:
    msgs = body.get("messages") or []
    for m in reversed(msgs):
        if m.get("role") != "user":
            continue
        c = m.get("content")
        if isinstance(c, str):
            return c
        parts = [b.get("text", "") for b in c or [] if isinstance(b, dict) and b.get("type") == "text"]
        if parts:
            return "\n".join(parts)
    return ""


SUMMARY_SECTIONS = ("Primary Request and Intent", "Key Technical Concepts", "Files and Code Sections",
                    "Errors and fixes", "Problem Solving", "All user messages", "Pending Tasks",
                    "Current Work", "Optional Next Step")


def _final_text(body: dict) -> str:
    """The last text block of the request's last message, when that message is the user's."""
    msgs = body.get("messages") or []
    if not msgs or msgs[-1].get("role") != "user":
        return ""
    c = msgs[-1].get("content")
    if isinstance(c, str):
        return c
    texts = [b.get("text", "") for b in c or [] if isinstance(b, dict) and b.get("type") == "text"]
    return texts[-1] if texts else ""


def is_summary_request(body: dict) -> bool:
    """A request that asks for a summary: either one that may not call tools (no tools, or
    tool_choice none) whose last user text mentions a summary, or one whose final user text asks
    for the answer inside <summary> tags (a summary call that shares the main call's tools)."""
    no_tools = not body.get("tools") or (body.get("tool_choice") or {}).get("type") == "none"
    if no_tools and "summar" in last_user_text(body).lower():
        return True
    final = _final_text(body).lower()
    return "summar" in final and "<summary>" in final


def echo_responder(body: dict) -> Item:
    """Default for long scripted-less sessions: acknowledge the last user text; a summary request
    (is_summary_request) gets a nine-section summary inside <analysis>/<summary> tags."""
    last = last_user_text(body)
    if is_summary_request(body):
        sections = "\n".join(f"{i}. {name}: (fake) see transcript." for i, name in enumerate(SUMMARY_SECTIONS, 1))
        return reply(f"<analysis>fake analysis</analysis>\n<summary>\n{sections}\n</summary>")
    snippet = " ".join(last.split())[:80] or "(no text)"
    return reply(f"ok: {snippet}")


def load_script(path: str) -> tuple[list[Item], dict]:
    """A JSON script file: either a list of items, or {"script": [...], ...options}."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    if isinstance(data, list):
        return data, {}
    if isinstance(data, dict):
        return list(data.get("script") or []), {k: v for k, v in data.items() if k != "script"}
    raise ValueError(f"{path}: a script is a JSON list of items or an object with a 'script' list")
