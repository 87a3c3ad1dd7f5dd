"""The summarizer LLM compaction is handed, so `compaction` never talks to a model.

The agent wraps its model client in this protocol (text only, no tools, purpose "compaction");
tests pass a scripted one. Failures are raised as `SummarizeError` so the engine can tell a
prompt-too-long answer (trim and retry) from a transport error (counts towards the breaker).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class SummaryResult:
    text: str                                   # the model's raw answer (analysis block included)
    usage: dict = field(default_factory=dict)   # Messages-API usage of the summary call, for cost
    model: str = ""


class SummarizeError(Exception):
    """A summary call that produced no summary.

    prompt_too_long: the request did not fit (the message should carry the API's
    `prompt is too long: N tokens > M maximum` so the engine can size its trim).
    transport: the call never got an answer (connection, 5xx, overload, timeout)."""

    def __init__(self, message: str, prompt_too_long: bool = False, transport: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.prompt_too_long = prompt_too_long
        self.transport = transport


class Summarizer(Protocol):
    async def summarize(self, messages: list[dict], *, system: str, instructions: str | None) -> SummaryResult:
        """Answer `messages` with text only.

        `messages` is a complete, valid request: the conversation followed by a final user turn
        holding the summary prompt (the focus, if any, is already written into it; it is passed
        again as `instructions` for logging and for the offline demo model). The answer must be
        text only: the model may call no tool (a provider that wants tool definitions because the
        messages hold tool blocks gets them with `tool_choice={"type": "none"}`). Raise
        `SummarizeError` on failure."""
        ...
