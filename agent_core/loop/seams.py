"""What the agent depends on, as Protocols: the loop is written against these, and the factory
(or a test) plugs in the real pieces. The model client's seam is `providers.model.ModelClient`."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Protocol, Sequence

from compaction import Entry

from agent_core.events import CostUpdate
from agent_core.sessions.loaded_session import LoadedSession
from agent_core.tools.base import ToolContext, ToolOutput
from agent_core.tools.permissions import Ask, Decision


class Tools(Protocol):
    """The tools the model is offered and the one place a call runs (never raises but cancels)."""

    def definitions(self) -> list[dict]: ...

    def add(self, tool: Any) -> None: ...     # an MCP server's tool, offered from the next request on

    async def execute(self, name: str, input: dict, ctx: ToolContext) -> ToolOutput: ...  # noqa: A002


class Permissions(Protocol):
    """Decides each tool call; `ask` is None when no one can be asked (headless)."""

    async def check(self, tool_name: str, input: dict, ask: Ask | None, *,  # noqa: A002
                    request_id: str = "") -> Decision: ...

    def to_dict(self) -> dict: ...


class CostBook(Protocol):
    """Tokens and dollars of every model call of the session."""

    @property
    def total_usd(self) -> float | None: ...

    def add(self, model: str, usage: dict, purpose: str = "main") -> None: ...

    def event(self) -> CostUpdate: ...

    def price(self, model: str, buckets: Mapping[str, int]) -> float | None: ...

    def to_dict(self) -> dict[str, Any]: ...


class SessionRecorder(Protocol):
    """The session log the loop writes as it goes; a failed write raises SessionWriteError."""

    session_id: str
    path: Path                       # the log file (written once the session has content)
    loaded: LoadedSession | None     # what resuming replayed and repaired, None for a new session

    def append_entry(self, entry: Entry) -> None: ...

    def append_history(self, entries: Sequence[Entry]) -> None: ...

    def append_event(self, event: Mapping[str, Any]) -> None: ...

    def append_state(self, state: Mapping[str, Any]) -> None: ...

    def sync(self, entries: Sequence[Entry]) -> None: ...

    def close(self) -> None: ...
