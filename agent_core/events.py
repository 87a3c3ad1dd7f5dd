"""The loop's one stream of typed events. The TUI, headless output and the session
log all consume it; `to_dict()` is the stream-json form (one object per line, with `type`)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Mapping, TypeVar

if TYPE_CHECKING:
    import asyncio

    from compaction.accounting.budget import ContextBudget


@dataclass
class Event:
    type: ClassVar[str] = "event"
    # Whether the session log keeps this event as a record of what happened (the loop writes each
    # one it emits); the others (deltas, figures, permission requests) are for the screen only.
    logged: ClassVar[bool] = False

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, **asdict(self)}


@dataclass
class TurnStarted(Event):
    type: ClassVar[str] = "turn_started"
    turn: int
    prompt: str


@dataclass
class TextDelta(Event):
    type: ClassVar[str] = "text_delta"
    text: str


@dataclass
class ThinkingDelta(Event):
    type: ClassVar[str] = "thinking_delta"
    text: str


@dataclass
class ToolCall(Event):
    type: ClassVar[str] = "tool_call"
    logged: ClassVar[bool] = True
    id: str
    name: str
    input: dict


@dataclass
class ToolResult(Event):
    type: ClassVar[str] = "tool_result"
    logged: ClassVar[bool] = True
    id: str
    name: str
    preview: str
    size: int
    is_error: bool = False


@dataclass
class PermissionRequest(Event):
    """A tool call waiting for the user. It carries its own answer: the front-end that shows it
    calls `answer()`, and the loop awaits `reply` (one channel, no callback beside the stream)."""
    type: ClassVar[str] = "permission_request"
    id: str
    name: str
    input: dict
    decision: str | None = None  # allow | always | deny, once answered
    note: str = ""               # how it would run, when that matters (bash: in the OS sandbox or not)
    _reply: asyncio.Future | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def reply(self) -> asyncio.Future:
        """The answer to come; made on first use, in the running loop."""
        if self._reply is None:
            # asyncio is loaded here, not with the events: the status line reads the budget
            # through this module, and asyncio is a fifth of its first call
            import asyncio  # noqa: PLC0415  (start-up time)

            self._reply = asyncio.get_running_loop().create_future()
        return self._reply

    def answer(self, decision: str) -> None:
        """allow | always | deny. Ignored once answered, or when the turn was cancelled meanwhile."""
        if not self.reply.done():
            self.reply.set_result(decision)

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "id": self.id, "name": self.name, "input": self.input,
                "decision": self.decision}


@dataclass
class AssistantDone(Event):
    type: ClassVar[str] = "assistant_done"
    logged: ClassVar[bool] = True
    message_id: str
    model: str
    usage: dict
    stop_reason: str | None


@dataclass
class ModelCall(Event):
    """One model call's usage, whatever it was for (`purpose`: main, compaction, memory): the cost
    book is fed from these, and the session log keeps each as its own record, so a report can
    price every call without rebuilding any from the totals."""
    type: ClassVar[str] = "model_call"
    logged: ClassVar[bool] = True   # written by the agent's record_call, as it books the call
    message_id: str
    model: str
    purpose: str
    usage: dict
    duration_s: float = 0.0     # request sent to last byte (the session's API time adds these up)


@dataclass
class ContextUpdate(Event):
    type: ClassVar[str] = "context"
    tokens: int
    window: int
    threshold: int
    state: str            # ok | warning | error | autocompact | blocking
    percent_left: float
    categories: dict[str, int] = field(default_factory=dict)
    warning: int = 0
    error: int = 0
    blocking: int = 0
    # Where `tokens` comes from: estimate (no response since the history changed), usage (anchored
    # on the latest response's usage) or counted (confirmed by the API's count_tokens).
    source: str = "estimate"
    # The next request's price before it is sent (compaction.next_request): tokens, cached_tokens,
    # uncached_tokens, usd_if_warm, usd_if_cold, cache_expires_in_s; None where not worked out.
    # (not compared: it moves with the clock, the context figures are what two events share)
    next_request: dict | None = field(default=None, compare=False)


def context_update(budget: ContextBudget, tokens: int, categories: dict[str, int],
                   source: str = "estimate", next_request: dict | None = None) -> ContextUpdate:
    """The context pane's event for `tokens` in `budget`; `source`: estimate | usage | counted."""
    return ContextUpdate(tokens=tokens, window=budget.context_window, threshold=budget.autocompact_threshold,
                         state=budget.state(tokens), percent_left=round(budget.percent_left(tokens), 1),
                         categories=categories, warning=budget.warning_threshold, error=budget.error_threshold,
                         blocking=budget.blocking_limit, source=source, next_request=next_request)


@dataclass
class Compaction(Event):
    type: ClassVar[str] = "compaction"
    logged: ClassVar[bool] = True
    layer: str
    trigger: str
    tokens_before: int
    tokens_after: int
    duration_s: float = 0.0
    transcript_path: str | None = None
    action: str = ""
    timestamp: float = 0.0                      # epoch seconds when it happened
    cache: dict[str, Any] | None = None         # what rewriting the cached prefix cost and should save
                                                # (cost_usd, saves_per_call_usd, rewrite_tokens, reason), if said
    parts: Mapping[str, Any] | None = None      # what the run changed in the history, entry by entry
                                                # (agent_core.loop.compaction_parts), on its last compaction
    usage: dict[str, Any] | None = None         # the summary call's usage, when a model wrote it

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        if self.parts is not None and not isinstance(self.parts, dict):   # kept compressed (packed_parts)
            d["parts"] = dict(self.parts)
        return d


@dataclass
class CompactionStarted(Event):
    """A summary call began (the LLM summary takes seconds to tens of seconds): a front-end shows a
    live block until CompactionEnded; the Compaction event follows when the result is adopted."""
    type: ClassVar[str] = "compaction_started"
    purpose: str                # compaction (the summary) | memory (session notes)
    tokens_before: int          # the estimated size of the request being summarized
    started: float = 0.0        # epoch seconds


@dataclass
class CompactionDelta(Event):
    """A piece of the summary as the model writes it."""
    type: ClassVar[str] = "compaction_delta"
    text: str


@dataclass
class CompactionEnded(Event):
    """The summary call is over: `ok` when it produced a summary (the engine still decides whether
    it is adopted), otherwise `message` says why not."""
    type: ClassVar[str] = "compaction_ended"
    ok: bool
    duration_s: float = 0.0
    chars: int = 0
    message: str = ""


@dataclass
class BreakerTripped(Event):
    type: ClassVar[str] = "breaker"
    logged: ClassVar[bool] = True
    breaker: str          # failures | thrash | ...
    reason: str


@dataclass
class CacheMiss(Event):
    """A request that read less from the prompt cache than the request before it left there:
    where its prefix changed (`tools`, `system`, `message N`; None: it did not) and why when
    it is known (compaction.accounting.cache_doctor). `text` says it in one line."""
    type: ClassVar[str] = "cache_miss"
    request: int
    read: int
    expected: int
    short: int
    where: str | None
    why: str | None
    model: str | None
    text: str


@dataclass
class CostUpdate(Event):
    type: ClassVar[str] = "cost"
    total_usd: float | None                     # None when some model's price is unknown
    by_model: dict[str, dict[str, Any]]         # model -> {bucket: tokens, ..., "cost_usd": float | None}
    by_purpose: dict[str, dict[str, Any]] = field(default_factory=dict)
    cache_hit_rate: float = 0.0                 # cache reads / all input tokens
    saved_usd: float | None = None              # what cache reads saved against plain input


@dataclass
class Error(Event):
    type: ClassVar[str] = "error"
    logged: ClassVar[bool] = True
    # auth | rate_limit | overloaded | prompt_too_long | connection | server | tool | blocking | internal
    # | input (a line of headless --input-format stream-json that is not a user message)
    kind: str
    message: str
    retryable: bool = False


@dataclass
class StreamRetry(Event):
    """The answer broke off mid-stream (the SDK never retries that); the partial text streamed so
    far is discarded and the call is sent again."""
    type: ClassVar[str] = "stream_retry"
    message: str
    attempt: int
    of: int


@dataclass
class Notice(Event):
    type: ClassVar[str] = "notice"
    logged: ClassVar[bool] = True
    message: str


@dataclass
class Waiting(Notice):
    """No byte of the answer yet: said every few seconds so a silent API is never a blank screen.
    A Notice, so every consumer that shows notices shows it; `type` tells scripts it is progress."""
    type: ClassVar[str] = "waiting"
    logged: ClassVar[bool] = False   # progress, not a record
    elapsed_s: float = 0.0
    attempt: int = 1      # the SDK's attempt at this request (it retries a timeout itself)
    of: int = 1


@dataclass
class FileMentioned(Notice):
    """A file the prompt mentioned (`@path`) is attached to the user message (agent_core/mentions).
    A Notice, so every consumer that shows notices says it; the TUI draws it as a chip. Not logged:
    the entry's `meta["mentions"]` keeps it."""
    type: ClassVar[str] = "file_mentioned"
    logged: ClassVar[bool] = False
    path: str = ""          # relative to the workspace (outside text: show it escaped)
    lines: int = 0          # attached
    total_lines: int = 0    # in the file


@dataclass
class ShellRan(Event):
    """A `!command` the user ran (shell mode, agent_core/loop/shell_input.py): its output is now
    their message in the history (the log has it as an entry, so the event is not logged).
    `cancelled`: stopped before it ended; nothing was added."""
    type: ClassVar[str] = "shell_ran"
    command: str
    output: str
    exit_code: int | None = None
    is_error: bool = False
    cancelled: bool = False


@dataclass
class TurnFinished(Event):
    type: ClassVar[str] = "turn_finished"
    logged: ClassVar[bool] = True
    stop_reason: str      # end_turn | max_turns | budget | cancelled | error | blocking
    turns: int


H = TypeVar("H")


def handler_for(table: Mapping[type, H], e: Event) -> H | None:
    """A front-end's dispatch: the handler of `e`'s type in `table`, or of the nearest type it
    derives from (a Waiting is shown as the Notice it is); None for an event it does not show."""
    return next((table[t] for t in type(e).__mro__ if t in table), None)
