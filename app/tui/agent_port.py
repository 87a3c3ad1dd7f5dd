"""What the TUI uses of the agent, as a Protocol: `CtxApp` holds its agent as an `AgentHandle` and
uses these members only, by plain attribute access. `agent_core.loop.agent.Agent` provides them
all (tests/app/test_agent_port.py checks it, with the TUI tests' scripted agent); a member a
model may lack has a default answer on the Agent (e.g. `let_time_pass` refuses on a real model).

Read-only members are properties here, so the Agent's plain list attributes satisfy them."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, AsyncIterator, Awaitable, Callable, Protocol, Sequence, runtime_checkable

from agent_core import events as ev
from agent_core.loop.compaction_preview import CompactionPreview
from agent_core.loop.memory_files import Memory
from agent_core.loop.rewind import RewindPoint
from agent_core.os_sandbox.sandbox import OsSandbox
from agent_core.providers.model import ModelInfo
from agent_core.tools.changed_files import ChangedFiles
from agent_core.tools.file_restore import Restore
from agent_core.waiting import Pause
from compaction.accounting.budget import ContextBudget
from compaction.entry import Entry

if TYPE_CHECKING:   # the MCP SDK (watchfiles with it) loads when a server starts, not before the first paint
    from agent_core.mcp.hub import ServerStatus


@runtime_checkable
class AgentHandle(Protocol):
    # Set by the app: a context figure the API confirmed while no turn runs (count_tokens).
    on_context: Callable[[ev.ContextUpdate], object] | None

    @property
    def info(self) -> ModelInfo: ...

    @property
    def session_id(self) -> str: ...

    @property
    def entries(self) -> Sequence[Entry]: ...         # the working history (shown on resume)

    @property
    def compactions(self) -> Sequence[ev.Compaction]: ...     # the session's, oldest first

    @property
    def budget(self) -> ContextBudget: ...                   # the thresholds the session works within now

    @property
    def cache_ttl(self) -> str: ...                          # 5m | 1h: what /model's switch would write under

    @property
    def context_history(self) -> Sequence[tuple[int, int, bool]]: ...   # (turn, tokens, compacted)

    @property
    def memory(self) -> Memory | None: ...                   # the memory files read at start (/context)

    # ----- figures ---------------------------------------------------------------------------------
    def context_event(self) -> ev.ContextUpdate: ...

    def cost_event(self) -> ev.CostUpdate: ...

    def load_warnings(self) -> list[str]: ...          # what resuming repaired in the log

    def active_seconds(self) -> float | None: ...      # model activity, for the burn rate; None: not kept

    def api_seconds(self) -> float | None: ...         # the model calls added up; None: not kept

    def started_at(self) -> float | None: ...          # when the session began (epoch seconds)

    def has_log(self) -> bool: ...                     # the session was written to disk

    def price(self, model: str, usage: dict[str, Any]) -> float | None: ...   # a call's dollars at the session's rates

    def view(self) -> Sequence[Entry]: ...             # what the next request would hold

    # ----- actions ---------------------------------------------------------------------------------
    def run(self, prompt: str) -> AsyncIterator[ev.Event]: ...

    def compact(self, focus: str | None = None) -> AsyncIterator[ev.Event]: ...

    async def preview_compact(self, focus: str | None = None) -> CompactionPreview: ...   # raises PreviewError

    def shell(self, command: str) -> AsyncIterator[ev.Event]: ...   # `!command`: run, output into the context

    def let_time_pass(self, text: str = "") -> Pause: ...   # /wait; raises PauseError

    def set_threshold(self, pct: float | None) -> ContextBudget: ...   # /threshold; raises ValueError out of bounds

    def keep_threshold(self, pct: float | None) -> str: ...   # saved per model; says where

    def cancel(self) -> None: ...

    def clear(self) -> None: ...

    def rewind_points(self) -> list[RewindPoint]: ...  # /rewind's prompts

    def rewind(self, index: int) -> str: ...            # cut to before that prompt; its text; raises ValueError

    def file_plan(self, index: int) -> list[Restore] | None: ...   # what that rewind would put back

    def restore_files(self, plan: list[Restore]) -> list[str]: ...   # put them back; a line per file

    def changed_files(self) -> ChangedFiles | None: ...   # None: no file history kept

    def session_diff(self) -> str: ...                  # /diff: the session's changes to files

    async def start_mcp(self) -> list[str]: ...         # the MCP servers, once; their notices

    def mcp_status(self) -> list[ServerStatus]: ...     # /mcp: each server's state and tools

    @property
    def mcp_tokens(self) -> dict[str, int]: ...         # each MCP server's tool definitions, estimated

    @property
    def sandbox(self) -> OsSandbox | None: ...          # the OS sandbox bash runs in; None: none

    async def aclose(self) -> None: ...


# Builds a replacement agent for /model, /resume and /clear: keyword overrides of the CLI config
# (model=..., resume=...). Provided by app.tui.launch; None disables switching.
AgentFactory = Callable[..., AgentHandle | Awaitable[AgentHandle]]


if TYPE_CHECKING:   # mypy checks that the Agent is a handle: mypy --follow-imports=silent app/tui/agent_port.py
    from agent_core.loop.agent import Agent

    def _the_agent_is_a_handle(agent: Agent) -> AgentHandle:
        return agent
