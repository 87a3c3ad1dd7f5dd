"""What the loop needs from a model, whoever serves it (Anthropic, the offline demo, a test server)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import AsyncIterator, Protocol, Union

from agent_core.events import CompactionDelta, CompactionEnded, CompactionStarted, TextDelta, ThinkingDelta, Waiting


@dataclass
class ModelResponse:
    """A finished assistant message, in Messages-API form."""
    id: str
    model: str
    content: list[dict]           # text / thinking / tool_use blocks
    usage: dict                   # input_tokens, output_tokens, cache_creation_input_tokens,
                                  # cache_read_input_tokens, optional cache_creation {ephemeral_5m/1h_input_tokens}
    stop_reason: str | None = None
    # What the server did to the context (server / hybrid engines): {"context_management": the
    # applied edits, "iterations": per-step usage, the compaction's own included}; None otherwise.
    server: dict | None = None


class ModelError(Exception):
    """A failed call, classified (agent_core/providers/errors.py) so the user is told what to do."""

    def __init__(self, kind: str, message: str, retryable: bool = False, retry_after: float | None = None,
                 status: int | None = None, already_retried: bool = False) -> None:
        super().__init__(message)
        # auth | rate_limit | overloaded | prompt_too_long | connection | server | bad_request | cancelled
        self.kind = kind
        self.message = message
        self.retryable = retryable
        self.retry_after = retry_after
        self.status = status
        # The client already retried this call itself (a connection or timeout failure before the
        # answer started): sending it again from the loop would only multiply the wait.
        self.already_retried = already_retried


# What a stream yields; the compaction events are the server engine's (a compaction block
# opening, its summary text, its end), shown live as the local engine's are.
StreamItem = Union[TextDelta, ThinkingDelta, Waiting, CompactionStarted, CompactionDelta, CompactionEnded,
                   ModelResponse]


@dataclass
class ModelInfo:
    provider: str                 # anthropic | demo
    model: str
    context_window: int
    max_output_tokens: int
    offline: bool = False
    notes: list[str] = field(default_factory=list)


class ModelClient(Protocol):
    info: ModelInfo

    def stream(self, *, system: str, messages: list[dict], tools: list[dict], max_tokens: int,
               purpose: str = "main") -> AsyncIterator[StreamItem]:
        """Yield text/thinking deltas as they arrive (and `Waiting` while none has), then exactly
        one ModelResponse.
        `purpose` is main | compaction | memory (the demo answers summary requests by it).
        Raises ModelError."""
        ...

    async def count_tokens(self, *, system: str, messages: list[dict], tools: list[dict]) -> int | None:
        """An exact count when the provider offers one (never on the hot path); None otherwise."""
        ...

    async def aclose(self) -> None: ...
