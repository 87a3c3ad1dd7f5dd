"""A recorded session as `ctxtui replay` sees it: every model request in order, what its context
held, what came back and when. Readers for Claude Code's and ctxtui's logs fill these; the replay
policies and the cache simulator only ever see this shape.

Token sizes are measured, not guessed, where the log allows it: each request's logged usage gives
the size of its whole input, so what was added since the previous request is sized by the
difference (split over the new messages by their estimated shares).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterator

if TYPE_CHECKING:
    from agent_core.logs.cost_state import CostState

MESSAGE_KINDS = ("prompt", "tool_result", "assistant", "summary", "attachment", "other")


@dataclass(slots=True)
class Message:
    """One message of the context. `key` identifies its content (equal keys, equal bytes: what the
    prompt cache compares); `text` is what references are searched in (text, tool inputs, results)."""
    role: str                              # user | assistant
    kind: str                              # one of MESSAGE_KINDS
    tokens: int
    key: str
    text: str = ""
    tools: tuple[str, ...] = ()            # tool_result: the tool(s) answered; assistant: the tools called
    files: tuple[str, ...] = ()            # paths read or written by the tool calls it holds or answers
    references: tuple[str, ...] = ()       # assistant: the files and identifiers it used (tool inputs)
    timestamp: float | None = None
    blocks: list[dict] | None = None       # the content in API form, so a policy can run the real engine on it


@dataclass(slots=True)
class RecordedCompaction:
    """A compaction the log itself holds (Claude Code's compact_boundary; ctxtui's reports)."""
    trigger: str
    tokens_before: int | None
    summary_tokens: int | None             # the summary's size, when the log shows it
    layer: str = "compact"
    timestamp: float | None = None
    preserved: bool = False                # the log kept the turn in progress verbatim after the summary


@dataclass(slots=True)
class Request:
    """One model call. `added` are the messages appended to the context since the previous request
    (the previous answer first, then tool results or the next prompt); `usage` is the logged usage
    in the five buckets of agent_core.pricing.cost.BUCKETS (final copy of the response)."""
    index: int
    timestamp: float
    model: str
    added: list[Message]
    response: Message
    usage: dict[str, int]
    compaction_before: RecordedCompaction | None = None   # the log compacted right before this request
    context_after_compaction: list[Message] | None = None  # what the log's context held after it
    purpose: str = "main"                  # main | compaction | memory | subagent
    sent: list[Message] | None = None      # the whole context as sent, when the log holds it (ctxtui's
                                           # projected working history); `added` then stays the raw
                                           # new messages, for the policies


@dataclass
class Trajectory:
    """One agent's requests (a main chain or one sub-agent). `overhead_tokens` is what precedes the
    messages in every request (tools + system prompt, measured from the log where it can be: see
    the readers); `head_cached_tokens` the part of it that was already cached when the session
    began (Claude Code shares its system prompt between sessions)."""
    path: str
    session_id: str
    model: str
    overhead_tokens: int                   # system prompt + tool definitions (the cached head)
    requests: list[Request] = field(default_factory=list)
    agent_id: str | None = None            # a sub-agent's trajectory
    skipped_lines: int = 0                 # corrupt or unreadable lines, skipped and counted
    source: str = "claude_code"            # claude_code | ctxtui
    compaction_calls: list[Request] = field(default_factory=list)  # the log's own summary calls
    head_cached_tokens: int = 0            # the part of the overhead already warm at the first request
    uncalibrated: int = 0                  # requests whose growth could not size their messages
    logged_config: dict | None = None      # a ctxtui log's meta config (its window, its 1M setting)
    cost_state: CostState | None = None    # a Claude Code main log's last cost-state record (cost_state.py):
                                           # what the whole session spent, its unlogged compaction calls included

    def contexts(self) -> Iterator[list[Message]]:
        """The context each request sent, in order (after the overhead): its `sent` when the log
        holds it, else the previous one plus `added`, or `context_after_compaction` plus `added`
        right after a compaction. Each list is a new list (the messages are shared)."""
        context: list[Message] = []
        for r in self.requests:
            if r.sent is not None:
                context = list(r.sent)
                yield context
                continue
            if r.context_after_compaction is not None:
                context = list(r.context_after_compaction)
            context = context + r.added
            yield context
