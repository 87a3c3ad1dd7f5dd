"""The loop's events as ACP session updates: one table by event type, as every front-end has.

The answer streams as agent message chunks, thinking as thought chunks, tools as tool_call /
tool_call_update, the context and cost as usage_update (usage.py). Errors are said in the answer
(an editor shows nothing else of a turn); notes (retries, breakers, a summary being written) go
in thought chunks, beside the answer. Progress that only repeats itself (Waiting) is left out.
Everything from the model or a tool is sent as it is: ACP is JSON, the text is data.
"""
from __future__ import annotations

from typing import Any, Callable

from acp.helpers import update_agent_message_text, update_agent_thought_text

from agent_core import events as ev
from agent_core.loop.cancelled import CANCELLED_RESULT
from app.acp import tool_calls
from app.acp.usage import UsageReporter


class Translator:
    """The updates for each event of a session's turns (None for an event not shown)."""

    def __init__(self, workspace: str, usage: UsageReporter) -> None:
        self.workspace = workspace
        self.usage = usage
        self._open_calls: dict[str, str] = {}     # tool calls shown with no result yet: id -> name
        self._table: dict[type[ev.Event], Callable[[Any], list[Any]]] = {
            ev.TextDelta: lambda e: [update_agent_message_text(e.text)] if e.text else [],
            ev.ThinkingDelta: lambda e: [update_agent_thought_text(e.text)] if e.text else [],
            ev.ToolCall: self._tool_call,
            ev.ToolResult: self._tool_result,
            ev.ContextUpdate: self._context,
            ev.Compaction: self._compaction,
            ev.TurnFinished: lambda e: self._unanswered() + self._usage(None),
            ev.Error: lambda e: [update_agent_message_text(f"\n\n[error] {e.kind}: {e.message}\n")],
            ev.StreamRetry: lambda e: [note(f"retry {e.attempt}/{e.of}: {e.message}; the answer is sent again")],
            ev.BreakerTripped: lambda e: [note(f"breaker {e.breaker}: {e.reason}")],
            ev.CompactionStarted: lambda e: [note("compacting the context: writing a summary")],
            ev.Waiting: lambda e: [],
            ev.FileMentioned: lambda e: [note(f"attached {e.path} ({e.lines} of {e.total_lines} lines)")],
            ev.Notice: lambda e: [note(e.message)],
        }

    def updates(self, e: ev.Event) -> list[Any]:
        handler = ev.handler_for(self._table, e)
        return handler(e) if handler is not None else []

    def _tool_call(self, e: ev.ToolCall) -> list[Any]:
        self._open_calls[e.id] = e.name
        return [tool_calls.started(e, self.workspace)]

    def _tool_result(self, e: ev.ToolResult) -> list[Any]:
        self._open_calls.pop(e.id, None)
        return [tool_calls.finished(e)]

    def _unanswered(self) -> list[Any]:
        """A turn cancelled mid-batch answers its tool calls as cancelled in the history, without a
        result event: the editor is told they failed, so none stays pending."""
        calls, self._open_calls = self._open_calls, {}
        return [tool_calls.finished(ev.ToolResult(id=i, name=name, preview=CANCELLED_RESULT,
                                                  size=len(CANCELLED_RESULT), is_error=True))
                for i, name in calls.items()]

    def _context(self, e: ev.ContextUpdate) -> list[Any]:
        return self._usage(e)

    def _compaction(self, e: ev.Compaction) -> list[Any]:
        self.usage.compaction(e)
        return []

    def _usage(self, e: ev.ContextUpdate | None) -> list[Any]:
        u = self.usage.update(e)
        return [u] if u is not None else []


def note(text: str) -> Any:
    """A note beside the answer (a thought chunk), on a line of its own."""
    return update_agent_thought_text(f"[note] {text}\n")
