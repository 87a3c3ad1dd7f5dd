"""An error from the loop, with what the user can do about it."""
from __future__ import annotations

from dataclasses import dataclass

from textual.content import Content
from textual.widgets import Static

from agent_core.security.visible_text import one_line, visible

# What the user can do about each kind of error (the loop's message says what happened).
ERROR_HINTS = {
    "auth": "Set ANTHROPIC_API_KEY to a valid key, or run `ctxtui --model demo` to work offline.",
    "rate_limit": "The SDK already retried. Wait a little, then send the prompt again.",
    "overloaded": "The API is overloaded. Wait a minute, then send the prompt again.",
    "prompt_too_long": "Run /compact (optionally with a focus) to shrink the context, or /clear to start over.",
    "connection": "Check your network and ANTHROPIC_BASE_URL, then send the prompt again.",
    "server": "The API failed on its side. Send the prompt again.",
    "tool": "The model has been told the tool failed and can try another way.",
    "blocking": "The context is full: run /compact to free space, or /clear to start a new session.",
    "internal": "This is a ctxtui bug. Nothing is lost (the session log keeps everything); please report it.",
}


@dataclass(slots=True)
class ErrorRecord:
    """A paged-out error: its kind, the loop's message and whether it can be retried."""
    kind: str
    message: str
    retryable: bool = False

    def build(self) -> "ErrorMessage":
        return ErrorMessage(self.kind, self.message, self.retryable)


class ErrorMessage(Static):
    """An error with what to do about it."""

    def __init__(self, kind: str, message: str, retryable: bool = False) -> None:
        self.error_kind, self.message, self.retryable = kind, message, retryable
        hint = ERROR_HINTS.get(kind, "")
        parts: list = [(f"✗ {one_line(kind.replace('_', ' '))}: ", "bold"), visible(message)]
        if retryable:
            parts.append(("  (retryable)", "dim"))
        if hint:
            parts += ["\n  → ", (hint, "italic")]
        super().__init__(Content.assemble(*parts), classes="error")

    def record(self) -> ErrorRecord:
        return ErrorRecord(self.error_kind, self.message, self.retryable)

    def clone(self) -> "ErrorMessage":
        return self.record().build()
