"""What an entry read back from a session log must look like.

A log line can be damaged (a bad disk, an old bug) or written by someone else on purpose. An
entry that parses as JSON but is not a message the API accepts would make every resumed request
fail (HTTP 400), and a crash while reading it would strand the session, so each entry is checked
before it joins the history: `entry_problem` says what is wrong with one, and the reader skips it
(with a warning) instead. A usage figure no model call can report (`usage_problem`) is dropped
from an entry that is otherwise fine: the history keeps the message and its size is estimated.

What is checked is what the request builder, the layers and `compaction.validate_history` rely
on: the shape of the entry, its role, and each content block's type and the fields of that type.
Empty messages, empty text blocks and tool calls without their results are left to
`repair.repair_history`, which makes the history valid to send.
"""
from __future__ import annotations

import math
from typing import Any, Mapping

from compaction.entry import KINDS

ROLES = ("user", "assistant")


def _text(v: Any) -> bool:
    return isinstance(v, str)


def _id(v: Any) -> bool:
    return isinstance(v, str) and bool(v)


def _block_problem(b: Any, role: str) -> str | None:
    if not isinstance(b, Mapping):
        return f"a content block is not an object ({type(b).__name__})"
    t = b.get("type")
    if not isinstance(t, str) or not t:
        return "a content block has no type"
    if t == "text" and not _text(b.get("text")):
        return "a text block has no text"
    if t == "thinking" and not _text(b.get("thinking")):
        return "a thinking block has no thinking text"
    if t == "redacted_thinking" and not _text(b.get("data")):
        return "a redacted_thinking block has no data"
    if t == "tool_use":
        if role != "assistant":
            return "a tool_use block in a user message"
        if not (_id(b.get("id")) and _id(b.get("name")) and isinstance(b.get("input", {}), Mapping)):
            return "a tool_use block without a text id, a name and an object input"
    if t == "tool_result":
        if role != "user":
            return "a tool_result block in an assistant message"
        content = b.get("content")
        if not _id(b.get("tool_use_id")):
            return "a tool_result block without a tool_use_id"
        if content is not None and not isinstance(content, str) and not (
                isinstance(content, list) and all(isinstance(x, Mapping) for x in content)):
            return "a tool_result block whose content is neither text nor a list of blocks"
    if t == "compaction":
        if role != "assistant":
            return "a compaction block in a user message"
        summary = b.get("content")
        if summary is not None and not (isinstance(summary, str) and summary):
            return "a compaction block whose content is neither a summary text nor null"
    return None


def entry_problem(d: Any) -> str | None:
    """What makes an entry dict (as `Entry.to_dict` writes it) unusable, or None. Its `usage` is
    not looked at here (see `agent_core.pricing.cost.usage_problem`)."""
    if not isinstance(d, Mapping):
        return f"the entry is not an object ({type(d).__name__})"
    if not _id(d.get("uuid")):
        return "the entry has no uuid"
    if d.get("kind", "message") not in KINDS:
        return f"unknown entry kind {str(d.get('kind'))[:40]!r}"
    ts = d.get("timestamp", 0.0)
    if isinstance(ts, bool) or not isinstance(ts, (int, float)) or not math.isfinite(ts):
        return "the entry's timestamp is not a number"
    if d.get("response_id") is not None and not isinstance(d.get("response_id"), str):
        return "the entry's response_id is not text"
    if d.get("meta") is not None and not isinstance(d.get("meta"), Mapping):
        return "the entry's meta is not an object"
    msg = d.get("message")
    if not isinstance(msg, Mapping):
        return "the entry has no message object"
    role = msg.get("role")
    if role not in ROLES:
        return f"the message's role is {str(role)[:40]!r}, not user or assistant"
    content = msg.get("content")
    if isinstance(content, str):
        return None
    if not isinstance(content, list):
        return "the message's content is neither text nor a list of blocks"
    for b in content:
        if (problem := _block_problem(b, role)) is not None:
            return problem
    return None
