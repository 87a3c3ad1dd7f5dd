"""The demo's prompt cache: the engine's own model (compaction/accounting/cache_model.py), so the demo's usage
looks like the real API's and agrees with what the engine and replay assume.

A request becomes blocks in the API's order — each tool definition, the system prompt, each message
— with breakpoints where the real client would send its `cache_control` markers (markers already
in the request are kept, as that client keeps them).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from compaction.accounting.cache_doctor import unmarked
from compaction.accounting.cache_model import Block, PrefixCache as CacheModel, ttl_seconds
from compaction.estimate import estimate_tools
from compaction.accounting.tokens import estimate_block, estimate_message, estimate_text

from agent_core.providers.cache_breakpoints import count_breakpoints, with_cache_breakpoints
from agent_core.providers.demo.conversation import canon


def _h(s: str) -> str:
    return hashlib.sha1(s.encode()).hexdigest()


def system_tokens(system: str | list) -> int:
    if isinstance(system, list):
        return sum(estimate_block(b) for b in system if isinstance(b, dict))
    return estimate_text(system or "")


def tool_tokens(tool: dict) -> int:
    return estimate_tools([tool])


def request_blocks(system: str | list, messages: list[dict], tools: list[dict]) -> list[Block]:
    """One cache block per tool, the system prompt and each message, with a breakpoint where the
    real client would put one (agent_core/providers/cache_breakpoints.py)."""
    m_system, m_messages, m_tools = with_cache_breakpoints(system, messages, tools)
    blocks = [Block(_h("tool" + canon(unmarked(t))), tool_tokens(t), count_breakpoints(mt) > 0)
              for t, mt in zip(tools or [], m_tools)]
    if system:
        blocks.append(Block(_h("system" + canon(unmarked(system))), system_tokens(system),
                            count_breakpoints(m_system) > 0))
    blocks += [Block(_h(canon(unmarked(m))), estimate_message(m), count_breakpoints(mm) > 0)
               for m, mm in zip(messages, m_messages)]
    return blocks


def request_tokens(system: str | list, messages: list[dict], tools: list[dict]) -> int:
    """The demo's input-token figure for a request: the estimator over system, tools and messages."""
    return (sum(tool_tokens(t) for t in tools or []) + (system_tokens(system) if system else 0)
            + sum(estimate_message(m) for m in messages))


@dataclass
class PrefixCache:
    """The demo's cache state; `ttl` is the lifetime its breakpoints ask for (5m or 1h)."""
    ttl: str = "5m"
    model: CacheModel = field(default_factory=CacheModel)

    def __post_init__(self) -> None:
        ttl_seconds(self.ttl)             # a bad TTL is refused here, not at the first request

    def usage(self, blocks: list[Block], output_tokens: int, now: float) -> dict:
        """Usage for a request at time `now` (and remember what it wrote), in the API's shape."""
        u = self.model.request(blocks, now, self.ttl)
        return {"input_tokens": u.input, "output_tokens": output_tokens,
                "cache_creation_input_tokens": u.cache_write, "cache_read_input_tokens": u.cache_read,
                "cache_creation": {"ephemeral_5m_input_tokens": u.cache_write_5m,
                                   "ephemeral_1h_input_tokens": u.cache_write_1h}}
