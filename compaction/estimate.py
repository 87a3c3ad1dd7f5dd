"""Token estimates of one message or block, without looking at any history: the cheap half of
token accounting (tokens.py anchors these on real usage). Entries cache them on first use.
"""
from __future__ import annotations

import json
import math
from typing import Any

CHARS_PER_TOKEN = 4
JSON_CHARS_PER_TOKEN = 2
MEDIA_TOKENS = 2_000
MESSAGE_OVERHEAD = 4
SUMMARY_KINDS = ("summary", "attachment", "snip_marker")   # counted whole as summaries
MESSAGE_CATEGORIES = ("user_text", "assistant_text", "tool_calls", "tool_results", "summaries")


def _looks_json(s: str) -> bool:
    s = s.strip()
    return len(s) > 1 and ((s[0] == "{" and s[-1] == "}") or (s[0] == "[" and s[-1] == "]"))


def estimate_text(s: str) -> int:
    if not s:
        return 0
    per = JSON_CHARS_PER_TOKEN if _looks_json(s) else CHARS_PER_TOKEN
    return math.ceil(len(s) / per)


def estimate_tools(tools: list[dict[str, Any]]) -> int:
    """Tool definitions as the JSON they are sent as: compact, at the ratio of a tool call's JSON
    input (estimating `str(dict)` as JSON-looking text, 2 characters a token, put the first call
    59% over an independent count)."""
    return sum(math.ceil(len(json.dumps(t, separators=(",", ":"))) / CHARS_PER_TOKEN) for t in tools)


def estimate_block(b: dict[str, Any]) -> int:
    t = b.get("type")
    if t == "text":
        return estimate_text(b.get("text", ""))
    if t == "thinking":
        return estimate_text(b.get("thinking", ""))
    if t == "redacted_thinking":
        return estimate_text(b.get("data", ""))
    if t in ("image", "document"):
        return MEDIA_TOKENS
    if t == "tool_use":
        return estimate_text(b.get("name", "")) + math.ceil(
            len(json.dumps(b.get("input", {}), separators=(",", ":"))) / CHARS_PER_TOKEN)
    if t == "tool_result":
        c = b.get("content", "")
        if isinstance(c, str):
            return estimate_text(c) + 2
        return sum(estimate_block(x) for x in c) + 2
    return estimate_text(json.dumps(b))


def estimate_message(message: dict[str, Any]) -> int:
    c = message.get("content", "")
    if isinstance(c, str):
        return estimate_text(c) + MESSAGE_OVERHEAD
    return sum(estimate_block(b) for b in c) + MESSAGE_OVERHEAD


def categorize_message(message: dict[str, Any], kind: str, tokens: int) -> dict[str, int]:
    """One sent message's estimate per context-pane category; summary-like kinds count whole
    (`tokens`, the message's estimate) as summaries."""
    cats = dict.fromkeys(MESSAGE_CATEGORIES, 0)
    if kind in SUMMARY_KINDS:
        cats["summaries"] = tokens
        return cats
    assistant = message["role"] == "assistant"
    for b in message["content"]:
        t = b.get("type")
        n = estimate_block(b)
        if t == "tool_use":
            cats["tool_calls"] += n
        elif t == "tool_result":
            cats["tool_results"] += n
        elif assistant:
            cats["assistant_text"] += n
        else:
            cats["user_text"] += n
    cats["assistant_text" if assistant else "user_text"] += MESSAGE_OVERHEAD
    return cats
