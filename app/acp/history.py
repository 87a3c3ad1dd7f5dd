"""A resumed session's conversation as session updates (session/load replays it to the client).

What is replayed is the conversation as it happened — every prompt, answer and tool call the log
holds in its first form — not the compacted working history the model sees now: an editor shows
what the user saw. Compaction's own entries (boundaries, summaries, re-attached files) are left
out; so are the files an @-mention attached (the prompt's own text says which).
"""
from __future__ import annotations

from typing import Any, Iterable, Iterator

from acp.helpers import update_agent_message_text, update_agent_thought_text, update_user_message_text

from compaction import Entry

from app.acp import tool_calls

RESULT_CHARS = 2_000      # a replayed tool result is cut to this: the editor shows a preview


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def replay(entries: Iterable[Entry], workspace: str) -> Iterator[Any]:
    """The updates that show `entries` (oldest first) as they were said."""
    for entry in entries:
        if entry.kind != "message":
            continue
        role, content = entry.message.get("role"), entry.message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        if role == "user" and entry.meta.get("mentions"):
            blocks = blocks[:1]       # the prompt; the files it attached follow it
        for b in blocks:
            if not isinstance(b, dict):
                continue
            kind = b.get("type")
            if kind == "text" and b.get("text"):
                text = str(b["text"])
                yield update_user_message_text(text) if role == "user" else update_agent_message_text(text)
            elif kind == "thinking" and b.get("thinking"):
                yield update_agent_thought_text(str(b["thinking"]))
            elif kind == "tool_use":
                yield tool_calls.replayed_call(b, workspace)
            elif kind == "tool_result":
                yield tool_calls.replayed_result(b, _text_of(b.get("content"))[:RESULT_CHARS])
