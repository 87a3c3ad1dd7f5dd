"""A logged history (resume) as conversation widgets: the same widgets a live turn makes."""
from __future__ import annotations

import json

from textual.widget import Widget

from agent_core.loop.agent import CANCELLED_RESULT
from compaction.entry import Entry

from app import format as fmt
from app.tui.widgets.conversation.assistant_message import AssistantMessage
from app.tui.widgets.conversation.compaction_marker import CompactionMarker
from app.tui.widgets.conversation.summary_block import SummaryBlock
from app.tui.widgets.conversation.thinking_block import ThinkingBlock
from app.tui.widgets.conversation.tool_block import ToolBlock
from app.tui.widgets.conversation.user_message import UserMessage


def entry_widgets(e: Entry, pending: dict[str, ToolBlock]) -> list[Widget]:
    """The widgets of one history entry. `pending` holds the tool calls made so far by id: a
    result sets its call's block (made by an earlier entry) and makes no widget of its own."""
    if e.kind == "compact_boundary":
        m = e.meta
        return [CompactionMarker(m.get("layer", "?"), m.get("trigger", "?"), int(m.get("tokens_before", 0)),
                                 int(m.get("tokens_after", 0)), m.get("transcript_path"))]
    if e.kind in ("summary", "attachment", "snip_marker"):
        return [SummaryBlock(e.text() or json.dumps(e.content)[:2000])]
    out: list[Widget] = []
    for b in e.content:
        t = b.get("type")
        if t == "text" and b.get("text"):
            out.append(UserMessage(b["text"]) if e.role == "user" else AssistantMessage(b["text"]))
        elif t == "thinking":
            out.append(ThinkingBlock(b.get("thinking", "")))
        elif t == "tool_use":
            block = ToolBlock(b.get("id", ""), b.get("name", "?"), b.get("input") or {})
            pending[block.call_id] = block
            out.append(block)
        elif t == "tool_result":
            block = pending.get(b.get("tool_use_id", ""))
            if block is None:
                continue
            text = _result_text(b.get("content", ""))
            if b.get("is_error") and text == CANCELLED_RESULT:
                block.set_cancelled()
            else:
                block.set_result(fmt.one_line(text, 2000) if len(text) > 2000 else text,
                                 len(text.encode()), bool(b.get("is_error")))
    return out


def _result_text(content) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(x.get("text", "") for x in content if isinstance(x, dict))
