"""An error from the loop, with what the user can do about it."""
from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.strip import Strip

from agent_core.security.visible_text import one_line, visible

from app.tui.widgets.conversation.draw import Look, paragraph

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

# When the loop's message already says it (it names this), only the rest of the hint is added: a
# dead port said "Check your network connection and ANTHROPIC_BASE_URL." and then again "Check
# your network and ANTHROPIC_BASE_URL, then send the prompt again."
SAID_ALREADY = {
    "connection": ("ANTHROPIC_BASE_URL", "Then send the prompt again."),
    "auth": ("ANTHROPIC_API_KEY", "Without a key, /model demo works offline in this session."),
    "prompt_too_long": ("/compact", "Or /clear to start over."),
    "blocking": ("/compact", "Or /clear to start a new session."),
}


def hint_for(kind: str, message: str) -> str:
    """What to add to the loop's message: the kind's hint, or only what the message leaves out."""
    said = SAID_ALREADY.get(kind)
    if said is not None and said[0] in message:
        return said[1]
    return ERROR_HINTS.get(kind, "")


@dataclass(slots=True)
class ErrorRecord:
    """An error: its kind, the loop's message and whether it can be retried."""
    margin = (1, 0)     # blank lines above and below (collapsed with the neighbours')
    kind: str
    message: str
    retryable: bool = False

    def content(self) -> Text:
        hint = hint_for(self.kind, self.message)
        text = Text.assemble((f"✗ {one_line(self.kind.replace('_', ' '))}: ", "bold"), visible(self.message))
        if self.retryable:
            text.append("  (retryable)", "dim")
        if hint:
            text.append("\n  → ")
            text.append(hint, "italic")
        return text

    def draw(self, look: Look, width: int) -> list[Strip]:
        return paragraph(look, self.content(), width, style=look.style("error"),
                                        bar=look.style("error-bar"))
