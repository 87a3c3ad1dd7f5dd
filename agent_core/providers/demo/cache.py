"""A simulated prompt cache, so the demo's usage looks like the real API's.

The API caches prefixes: what a recent request already sent, unchanged and in the same order, is
read back cheaply; everything after the first change is written again. Items are compared whole
(tool definitions, the system prompt, each message), in the API's order tools → system → messages.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from compaction.estimate import estimate_tools
from compaction.tokens import estimate_block, estimate_message, estimate_text

from agent_core.providers.demo.conversation import canon

MIN_CACHEABLE = 1_024     # shorter prompts are not cached (as with the API)
SLOTS = 4                 # recent requests kept
UNCACHED_TAIL = 4         # the few tokens after the last breakpoint, billed as plain input


def _h(s: str) -> str:
    return hashlib.sha1(s.encode()).hexdigest()


def _plain(obj: object) -> object:
    """The item without cache_control markers: moving a breakpoint does not change the prefix."""
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items() if k != "cache_control"}
    if isinstance(obj, list):
        return [_plain(v) for v in obj]
    return obj


def system_tokens(system: str | list) -> int:
    if isinstance(system, list):
        return sum(estimate_block(b) for b in system if isinstance(b, dict))
    return estimate_text(system or "")


def tool_tokens(tool: dict) -> int:
    return estimate_tools([tool])


def request_items(system: str | list, messages: list[dict], tools: list[dict]) -> list[tuple[str, int]]:
    """(digest, estimated tokens) per cacheable item of a request."""
    items = [(_h("tool" + canon(_plain(t))), tool_tokens(t)) for t in tools or []]
    if system:
        items.append((_h("system" + canon(_plain(system))), system_tokens(system)))
    items += [(_h(canon(_plain(m))), estimate_message(m)) for m in messages]
    return items


def request_tokens(system: str | list, messages: list[dict], tools: list[dict]) -> int:
    """The demo's input-token figure for a request: the estimator over system, tools and messages."""
    return sum(n for _, n in request_items(system, messages, tools))


@dataclass
class PrefixCache:
    slots: int = SLOTS
    min_cacheable: int = MIN_CACHEABLE
    _recent: list[list[tuple[str, int]]] = field(default_factory=list)

    def lookup(self, items: list[tuple[str, int]]) -> int:
        """Tokens of the longest prefix shared with a recent cached request."""
        best = 0
        for old in self._recent:
            read = 0
            for (a, n), (b, _) in zip(items, old):
                if a != b:
                    break
                read += n
            best = max(best, read)
        return best

    def usage(self, items: list[tuple[str, int]], output_tokens: int) -> dict:
        """Usage for a request (and remember it): read the shared prefix, write the rest."""
        total = sum(n for _, n in items)
        if total < self.min_cacheable:
            read, write = 0, 0
        else:
            read = self.lookup(items)
            write = max(0, total - read - UNCACHED_TAIL)
            self._recent = ([items] + [r for r in self._recent if r != items])[:self.slots]
        return {"input_tokens": total - read - write, "output_tokens": output_tokens,
                "cache_creation_input_tokens": write, "cache_read_input_tokens": read,
                "cache_creation": {"ephemeral_5m_input_tokens": write, "ephemeral_1h_input_tokens": 0}}
