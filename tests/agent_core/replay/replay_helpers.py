"""Shared helpers of the replay tests."""
from __future__ import annotations

from agent_core.logs.trajectory import Message, Request
from agent_core.replay.simulate import Step


class Recorded:
    """A policy wrapper that keeps every context the policy sent (a test's own oracle reads them)."""

    def __init__(self, inner) -> None:
        self.inner, self.name, self.ttl = inner, inner.name, inner.ttl
        self.sent: list[list[Message]] = []

    def step(self, request: Request) -> Step:
        step = self.inner.step(request)
        self.sent.append(list(step.context))
        return step

    def reread(self, messages: list[Message]) -> None:
        self.inner.reread(messages)

    def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if close is not None:
            close()
