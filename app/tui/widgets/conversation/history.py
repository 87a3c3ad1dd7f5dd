"""A logged history (resume) as conversation records, the same records a live turn makes. The
conversation draws the latest; the rest stay paged out until scrolled back to."""
from __future__ import annotations

import json

from agent_core.loop.cancelled import CANCELLED_RESULT
from agent_core.loop.shell_input import shell_of
from agent_core.security.visible_text import visible
from compaction.entry import Entry
from compaction.mentioned_files import mentioned

from app import format as fmt
from app.tui.widgets.conversation.answer_record import AssistantRecord
from app.tui.widgets.conversation.compaction_marker import MarkerRecord
from app.tui.widgets.conversation.mention_chip import MentionRecord
from app.tui.widgets.conversation.shell_block import ShellRecord
from app.tui.widgets.conversation.summary_block import SummaryRecord
from app.tui.widgets.conversation.thinking_block import ThinkingRecord
from app.tui.widgets.conversation.tool_block import ToolRecord
from app.tui.widgets.conversation.user_message import UserRecord


def entry_records(e: Entry, pending: dict[str, ToolRecord]) -> list:
    """The records of one history entry. `pending` holds the tool calls made so far by id: a
    result completes its call's record (made by an earlier entry) and makes no record of its own."""
    if e.kind == "compact_boundary":
        m = e.meta
        return [MarkerRecord(m.get("layer", "?"), m.get("trigger", "?"), int(m.get("tokens_before", 0)),
                             int(m.get("tokens_after", 0)), m.get("transcript_path"))]
    if e.kind in ("summary", "attachment", "snip_marker"):
        return [SummaryRecord(e.text() or json.dumps(e.content)[:2000])]
    shell = shell_of(e)
    if shell is not None:            # a `!command` the user ran: drawn as one, not as a prompt
        command, output, is_error = shell
        return [ShellRecord(command, output, is_error)]
    out: list = []
    attached = {m.block: m for m in mentioned(e)}     # files the prompt attached with @path: a chip each
    for i, b in enumerate(e.content):
        t = b.get("type")
        if i in attached:
            mention = attached[i]
            out.append(MentionRecord(mention.path, mention.lines, mention.total_lines))
        elif t == "text" and b.get("text"):
            out.append(UserRecord(b["text"]) if e.role == "user" else AssistantRecord(visible(b["text"])))
        elif t == "thinking":
            out.append(ThinkingRecord(b.get("thinking", "")))
        elif t == "tool_use":
            record = ToolRecord(b.get("id", ""), b.get("name", "?"), b.get("input") or {})
            pending[record.call_id] = record
            out.append(record)
        elif t == "tool_result":
            call = pending.get(b.get("tool_use_id", ""))
            if call is None:
                continue
            text = _result_text(b.get("content", ""))
            if b.get("is_error") and text == CANCELLED_RESULT:
                call.set_cancelled()
            else:
                call.set_result(fmt.one_line(text, 2000) if len(text) > 2000 else text,
                                  len(text.encode()), bool(b.get("is_error")))
    return out


def _result_text(content) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(x.get("text", "") for x in content if isinstance(x, dict))
