"""The part of every request that is not the conversation: the system prompt and the tools offered,
with their estimates. The counting, the context figures and the model call read the same one."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Protocol

from compaction.estimate import estimate_tools
from compaction.accounting.tokens import estimate_text


class ServerTool(Protocol):
    """An MCP tool as the head needs it: the server it came from and its definition."""

    server: str

    def definition(self) -> dict: ...


@dataclass
class RequestHead:
    system_prompt: str
    tool_defs: list[dict]
    system_tokens: int
    tools_tokens: int
    memory_tokens: int = 0                 # the memory files' part of the system prompt (factory)
    mcp_tokens: dict[str, int] = field(default_factory=dict)   # each MCP server's definitions, estimated

    @classmethod
    def of(cls, system_prompt: str, tool_defs: list[dict]) -> RequestHead:
        return cls(system_prompt, tool_defs, estimate_text(system_prompt), estimate_tools(tool_defs))

    @property
    def estimate(self) -> int:
        """The head's own estimate: what count_tokens of the head is compared with."""
        return self.system_tokens + self.tools_tokens

    def use_tools(self, tool_defs: list[dict], server_tools: Iterable[ServerTool]) -> None:
        """The tools offered from the next request on (MCP servers started or gone)."""
        self.tool_defs = tool_defs
        self.tools_tokens = estimate_tools(tool_defs)
        by_server: dict[str, int] = {}
        for t in server_tools:
            by_server[t.server] = by_server.get(t.server, 0) + estimate_tools([t.definition()])
        self.mcp_tokens = by_server
