"""The `none` preset as replay runs it without an engine (nothing compacts, so the context is the
recorded messages in order, as a cheap view), and what every policy adds at a request. The other
presets run the real engine with their settings (engine_policy.py, compaction/presets.py).

Every policy sees the conversation as the recorded messages in order, with the log's own
compactions undone: a summary the log wrote, and what it re-attached after compacting, are left
out — each policy decides for itself when to compact and what comes back.
"""
from __future__ import annotations

from typing import Iterator, Sequence, overload

from agent_core.logs.trajectory import Message, Request
from agent_core.replay.simulate import Step


def new_messages(request: Request) -> list[Message]:
    """What a request adds to the conversation, the log's own compaction artefacts left out."""
    after = {m.key for m in request.context_after_compaction or ()}
    return [m for m in request.added if m.kind != "summary" and m.key not in after]


class Prefix(Sequence[Message]):
    """The first `n` messages of a list that only grows: a step's context under `none` without
    copying the whole session at every request."""

    __slots__ = ("_items", "_n")

    def __init__(self, items: list[Message], n: int) -> None:
        self._items, self._n = items, n

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, i: int) -> Message: ...
    @overload
    def __getitem__(self, i: slice) -> list[Message]: ...

    def __getitem__(self, i: int | slice) -> Message | list[Message]:
        if isinstance(i, slice):
            return self._items[: self._n][i]
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError(i)
        return self._items[i]

    def __iter__(self) -> Iterator[Message]:
        items = self._items
        return (items[i] for i in range(self._n))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)


class NoCompaction:
    """`none`: every message ever added stays; a request over the window is an overflow (still
    priced as if it had been sent). Each step's context is a `Prefix` of the one growing list,
    `kept` the previous step's length."""

    def __init__(self, ttl: str, name: str = "none") -> None:
        self.name, self.ttl = name, ttl
        self.context: list[Message] = []

    def step(self, request: Request) -> Step:
        kept = len(self.context)
        self.context.extend(new_messages(request))
        return Step(Prefix(self.context, len(self.context)), kept=kept)

    def reread(self, messages: Sequence[Message]) -> None:
        """A re-read's call and result, in the conversation from the next request on (simulate.py)."""
        self.context.extend(messages)
