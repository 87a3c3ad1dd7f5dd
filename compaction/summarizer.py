"""The summarizer LLM compaction is handed, so `compaction` never talks to a model.

The agent wraps its model client in this protocol (purpose "compaction"); tests pass a scripted
one. The summary call shares the main call's prefix — the same system prompt, the same tool
definitions, the same `tool_choice` — so it reads the conversation from the prompt cache instead of
paying for it again; the engine therefore hands over only the messages, and the summarizer adds what
the main call sends before them. Failures are raised as `SummarizeError` so the engine can tell a
prompt-too-long answer (trim and retry) from a transport error (counts towards the breaker).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class SummaryResult:
    text: str                                   # the model's raw answer (analysis block included)
    usage: dict[str, Any] = field(default_factory=dict)   # Messages-API usage of the summary call, for cost
    model: str = ""


class SummarizeError(Exception):
    """A summary call that produced no summary.

    prompt_too_long: the request did not fit (the message should carry the API's
    `prompt is too long: N tokens > M maximum` so the engine can size its trim).
    transport: the call never got an answer (connection, 5xx, overload, timeout).
    A summary answer that calls a tool is a failed attempt too (neither of the above)."""

    def __init__(self, message: str, prompt_too_long: bool = False, transport: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.prompt_too_long = prompt_too_long
        self.transport = transport


class Summarizer(Protocol):
    async def summarize(self, messages: list[dict[str, Any]], *, instructions: str | None) -> SummaryResult:
        """Answer `messages` with a text summary.

        `messages` is a complete, valid request: the conversation as the main call sends it,
        followed by the summary prompt as the last user message (the focus, if any, is already
        written into it; it is passed again as `instructions` for logging and for the offline demo
        model). Send it with the main call's system prompt, tools and `tool_choice`. An answer that
        calls a tool is no summary: raise `SummarizeError` for it, as for any other failure."""
        ...
