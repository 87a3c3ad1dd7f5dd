"""The two policies replay models itself: `none` (never compact) and `cc` (Claude Code-like).
The `ctxtui` policy runs the real engine instead (engine_policy.py).

Both see the conversation as the recorded messages in order, with the log's own compactions
undone: a summary the log wrote, and what it re-attached after compacting, are left out — each
policy decides for itself when to compact and what comes back.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Iterator, Sequence, overload

from compaction.accounting.budget import ContextBudget

from agent_core.logs.trajectory import Message, Request
from agent_core.replay.simulate import Step, SummaryCall

READ_TOOLS = frozenset({"Read", "read_file", "NotebookRead"})
CC_TIME_GAP_S = 60 * 60          # CC's time-based clear: the gap since the last response
CC_TIME_KEEP = 5                 # ... keeps the last 5 tool results
CC_CLEARED_TEXT = "[Old tool result content cleared]"
CC_CLEARED_TOKENS = 12
CC_REATTACH_FILES = 5
CC_FILE_TOKENS = 5_000
CC_FILES_TOKENS = 50_000


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


def cc_budget(window: int, max_output: int) -> ContextBudget:
    """Claude Code's thresholds: auto-compact at window − 13,000 − min(20,000, max output)."""
    return ContextBudget(context_window=window, max_output_tokens=max_output)


class ClaudeCodeLike:
    """`cc`: auto-compact only at the threshold — one summary call sharing the main prefix, then a
    new context of the summary and the 5 most recently read files (≤5,000 tokens each, ≤50,000 in
    all) — and, when the gap since the last response is over 60 minutes, old tool results cleared
    but the last 5. Each tool-result message counts as one result."""

    def __init__(self, *, overhead: int, window: int, max_output: int, ttl: str, summary_tokens: int,
                 prompt_tokens: int, name: str = "cc") -> None:
        self.name, self.ttl = name, ttl
        self.overhead = overhead
        self.budget = cc_budget(window, max_output)
        self.summary_tokens = summary_tokens
        self.prompt_tokens = prompt_tokens
        self.context: list[Message] = []
        self.reads: OrderedDict[str, Message] = OrderedDict()   # path -> latest read result, oldest first
        self.last_response: float | None = None

    def tokens(self) -> int:
        return self.overhead + sum(m.tokens for m in self.context)

    def step(self, request: Request) -> Step:
        step = Step([], kept=len(self.context))
        added = new_messages(request)
        self.context.extend(added)
        for m in added:
            if m.kind == "tool_result" and m.files and READ_TOOLS.intersection(m.tools):
                for path in m.files:
                    self.reads.pop(path, None)
                    self.reads[path] = m
        if self.last_response is not None and request.timestamp - self.last_response > CC_TIME_GAP_S:
            if self._clear_old_results():
                step.compactions.append("time_clear")
                step.kept = None
        if self.tokens() >= self.budget.autocompact_threshold:
            step.calls.append(SummaryCall(list(self.context), self.prompt_tokens, self.summary_tokens, "autocompact"))
            self.context = self._compacted(request.index)
            step.compactions.append("autocompact")
            step.kept = 0
        self.last_response = request.response.timestamp or request.timestamp
        step.context = list(self.context)
        return step

    def _clear_old_results(self) -> bool:
        results = [i for i, m in enumerate(self.context) if m.kind == "tool_result"]
        changed = False
        for i in results[:-CC_TIME_KEEP] if len(results) > CC_TIME_KEEP else []:
            m = self.context[i]
            if m.tokens > CC_CLEARED_TOKENS and not m.key.endswith(":cleared"):
                self.context[i] = Message(m.role, m.kind, CC_CLEARED_TOKENS, m.key + ":cleared", CC_CLEARED_TEXT,
                                          tools=m.tools, timestamp=m.timestamp)
                changed = True
        return changed

    def _compacted(self, index: int) -> list[Message]:
        new = [Message("user", "summary", self.summary_tokens, f"cc-summary\x00{index}")]
        left = CC_FILES_TOKENS
        for path, m in list(reversed(self.reads.items()))[:CC_REATTACH_FILES]:
            size = min(m.tokens, CC_FILE_TOKENS, left)
            if size <= 0:
                break
            left -= size
            text = path + "\n" + (m.text if m.tokens <= size else m.text[: size * 4])
            new.append(Message("user", "attachment", size, f"cc-file\x00{index}\x00{path}", text, files=(path,)))
        return new
