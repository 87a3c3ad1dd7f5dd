"""What stayed visible under a policy: the references each recorded response used (file paths and
identifiers from its tool inputs) that the context sent for it still held somewhere in its text,
and the user's prompts still verbatim in the last request.

Searching every context for every reference would cost O(requests × context); instead each
message's text is searched once for the trajectory's references (cached by `Message.key`, shared
by every policy), and a request only unions the small sets of its context's messages.
"""
from __future__ import annotations

from typing import Iterable, Sequence

from agent_core.logs.trajectory import Message, Trajectory


def user_prompts(trajectory: Trajectory) -> list[Message]:
    """The user's own prompts, in order (the log's own summaries and tool results excluded)."""
    return [m for r in trajectory.requests for m in r.added if m.kind == "prompt" and m.text.strip()]


class ReferenceIndex:
    def __init__(self, trajectory: Trajectory) -> None:
        self.refs = sorted({r for req in trajectory.requests for r in req.response.references if r})
        self._held: dict[str, frozenset[str]] = {}

    def held(self, message: Message) -> frozenset[str]:
        """The trajectory's references that appear in this message's text."""
        got = self._held.get(message.key)
        if got is None:
            text = message.text
            got = self._held[message.key] = frozenset(r for r in self.refs if r in text) if text else frozenset()
        return got

    def found(self, wanted: Iterable[str], context: Sequence[Message]) -> int:
        """How many of `wanted` appear in the text of `context`."""
        left = set(wanted)
        total = len(left)
        for m in context:
            if not left:
                break
            left -= self.held(m)
        return total - len(left)

    @staticmethod
    def verbatim(prompts: Sequence[Message], context: Sequence[Message]) -> int:
        """How many prompts appear word for word in the context's text."""
        if not prompts:
            return 0
        text = "\n".join(m.text for m in context)
        return sum(1 for p in prompts if p.text.strip() in text)
