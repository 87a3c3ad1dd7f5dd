"""The judge of the history invariants: what the API would reject with HTTP 400 (the list:
docs/architecture.md, "The history")."""
from __future__ import annotations

from typing import Any

def _blocks(msg: dict[str, Any]) -> list[Any]:
    c = msg.get("content")
    if isinstance(c, str):
        return [{"type": "text", "text": c}]
    return c if isinstance(c, list) else []


def _opens_with_compaction(msg: dict[str, Any]) -> bool:
    """An assistant message whose first block is a server compaction block: the API accepts it
    first, in place of the messages it summarizes."""
    blocks = _blocks(msg)
    return msg.get("role") == "assistant" and bool(blocks) and isinstance(blocks[0], dict) \
        and blocks[0].get("type") == "compaction"


def validate_history(messages: list[dict[str, Any]]) -> list[str]:
    """Every invariant violation in a Messages-API message list; an empty list means valid."""
    errors: list[str] = []
    if not messages:
        return ["messages: at least one message is required"]
    if messages[0].get("role") != "user" and not _opens_with_compaction(messages[0]):
        errors.append(f"messages.0: the first message must be a user message, got {messages[0].get('role')!r}")
    seen_ids: set[str | None] = set()
    for i, msg in enumerate(messages):
        role = msg.get("role")
        if role not in ("user", "assistant"):
            errors.append(f"messages.{i}: role must be 'user' or 'assistant', got {role!r}")
            continue
        content = msg.get("content")
        if content is None or content == "" or content == []:
            errors.append(f"messages.{i}: content must not be empty")
            continue
        if not isinstance(content, (str, list)):
            errors.append(f"messages.{i}: content must be a string or a list of blocks")
            continue
        blocks = _blocks(msg)
        for j, b in enumerate(blocks):
            if not isinstance(b, dict) or "type" not in b:
                errors.append(f"messages.{i}.content.{j}: a block must be an object with a type")
                continue
            if b["type"] == "text" and not str(b.get("text", "")).strip():
                errors.append(f"messages.{i}.content.{j}: text content blocks must be non-empty")
            if b["type"] == "compaction":
                if role != "assistant":
                    errors.append(f"messages.{i}.content.{j}: compaction is only allowed in assistant messages")
                summary = b.get("content")
                if summary is not None and (not isinstance(summary, str) or not summary):
                    errors.append(f"messages.{i}.content.{j}: compaction content must be a non-empty string "
                                  "or null")
            if b["type"] == "tool_use":
                if role != "assistant":
                    errors.append(f"messages.{i}.content.{j}: tool_use is only allowed in assistant messages")
                if b.get("id") in seen_ids:
                    errors.append(f"messages.{i}.content.{j}: duplicate tool_use id {b.get('id')!r}")
                seen_ids.add(b.get("id"))
            if b["type"] == "tool_result":
                if role != "user":
                    errors.append(f"messages.{i}.content.{j}: tool_result is only allowed in user messages")
                    continue
                prev = messages[i - 1] if i > 0 else None
                prev_ids = {x.get("id") for x in _blocks(prev) if isinstance(x, dict) and x.get("type") == "tool_use"} \
                    if prev is not None and prev.get("role") == "assistant" else set()
                if b.get("tool_use_id") not in prev_ids:
                    errors.append(f"messages.{i}.content.{j}: tool_result {b.get('tool_use_id')!r} has no matching "
                                  "tool_use in the immediately preceding assistant message")
        if role == "assistant" and i < len(messages) - 1:
            uses = [b.get("id") for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"]
            if uses:
                nxt = messages[i + 1]
                answered = {b.get("tool_use_id") for b in _blocks(nxt) if isinstance(b, dict)
                            and b.get("type") == "tool_result"} if nxt.get("role") == "user" else set()
                for uid in uses:
                    if uid not in answered:
                        errors.append(f"messages.{i}: tool_use {uid!r} is not answered by a tool_result "
                                      f"in messages.{i + 1}")
    return errors
