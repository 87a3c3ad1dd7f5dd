"""Where a request's prompt-cache breakpoints go: the system prompt, the last tool definition and
the latest message, within the API's limit of four markers. No SDK here, so the demo model marks
its requests exactly as the real client does without loading `anthropic`.
"""
from __future__ import annotations

from typing import Any

from agent_core.providers.server_context import COMPACTION_BLOCK

EPHEMERAL = {"type": "ephemeral"}
CACHE_TTLS = ("5m", "1h")    # the API's default lifetime of a cache entry, and the longer one it sells
MAX_BREAKPOINTS = 4          # the API rejects a request with more cache_control blocks than this
# A compaction block goes back exactly as the API returned it: no breakpoint is ever added to one.
UNCACHEABLE = ("thinking", "redacted_thinking", COMPACTION_BLOCK)


def count_breakpoints(obj: Any) -> int:
    """cache_control markers already present anywhere in a request part."""
    if isinstance(obj, dict):
        return int("cache_control" in obj) + sum(count_breakpoints(v) for v in obj.values())
    if isinstance(obj, list):
        return sum(count_breakpoints(v) for v in obj)
    return 0


def cache_control(ttl: str = "5m") -> dict:
    """A breakpoint marker: plain ephemeral for the default 5 minutes, with `ttl` for an hour."""
    if ttl not in CACHE_TTLS:
        raise ValueError(f"cache TTL must be one of {', '.join(CACHE_TTLS)}, got {ttl!r}")
    return dict(EPHEMERAL) if ttl == "5m" else {**EPHEMERAL, "ttl": ttl}


def _mark_last_message(messages: list[dict], marker: dict) -> tuple[list[dict], bool]:
    """A copy of `messages` whose latest message has a breakpoint on its last cacheable block."""
    if not messages:
        return list(messages), False
    last = messages[-1]
    content = last.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
    for j in range(len(blocks) - 1, -1, -1):
        b = blocks[j]
        if not isinstance(b, dict) or b.get("type") in UNCACHEABLE or "cache_control" in b:
            continue
        if b.get("type") == "text" and not str(b.get("text", "")).strip():
            continue
        blocks[j] = {**b, "cache_control": dict(marker)}
        return [*messages[:-1], {**last, "content": blocks}], True
    return list(messages), False


def with_cache_breakpoints(system: str | list[dict] | None, messages: list[dict], tools: list[dict],
                           ttl: str = "5m") -> tuple[list[dict] | None, list[dict], list[dict]]:
    """Copies of system, messages and tools with ephemeral breakpoints on the system prompt, the last
    tool definition and the latest message, so each call reads the previous call's prefix from the
    prompt cache. The caller's dicts are never mutated. Markers already present are kept and count
    against the API's limit of four; the latest message is marked first, then system, then tools.
    `ttl` is the lifetime asked for (5m or 1h)."""
    marker = cache_control(ttl)
    budget = MAX_BREAKPOINTS - count_breakpoints(messages) - count_breakpoints(tools) - count_breakpoints(system)
    out_messages = list(messages)
    if budget > 0:
        marked, added = _mark_last_message(messages, marker)
        if added:
            out_messages, budget = marked, budget - 1
    if isinstance(system, str):
        sys_blocks: list[dict] | None = [{"type": "text", "text": system}] if system.strip() else None
    else:
        sys_blocks = [dict(b) for b in system] if system else None
    if sys_blocks and budget > 0 and "cache_control" not in sys_blocks[-1]:
        sys_blocks[-1] = {**sys_blocks[-1], "cache_control": dict(marker)}
        budget -= 1
    out_tools = list(tools)
    if out_tools and budget > 0 and "cache_control" not in out_tools[-1]:
        out_tools[-1] = {**out_tools[-1], "cache_control": dict(marker)}
    return sys_blocks, out_messages, out_tools
