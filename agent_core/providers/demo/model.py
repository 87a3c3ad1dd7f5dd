"""The offline demo model: the default when no API key is set.

It answers like an agent exploring the workspace with the built-in tools, streams its text,
reports usage from the same estimator the engine uses plus a simulated prefix cache, rejects
requests over its window the way the API does, and answers summary requests extractively — so
every part of ctxtui, compaction included, can be seen working with no network. The same
requests, in the same order, always get the same answers.
"""
from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import AsyncIterator

from compaction import clock
from compaction.accounting.tokens import estimate_block
from compaction.validate import validate_history

from agent_core.providers.demo.cache import PrefixCache, request_blocks, request_tokens
from agent_core.providers.demo.conversation import parse
from agent_core.providers.demo.planner import Planner
from agent_core.providers.demo.summary import memory_notes, summarize
from agent_core.providers.demo.workspace import Workspace, digest
from agent_core.events import TextDelta
from agent_core.providers.model import ModelError, ModelInfo, ModelResponse, StreamItem
from agent_core.tool_spec import TOOL_NAMES

_CHUNK = re.compile(r"\s*\S+\s*")

__all__ = ["DemoModel", "request_tokens"]


def chunks(text: str, seed: int = 0) -> list[str]:
    """A few words per chunk (3–5), whitespace kept, so ''.join(chunks) == text."""
    words = _CHUNK.findall(text)
    out, i, k = [], 0, seed
    while i < len(words):
        n = 3 + k % 3
        out.append("".join(words[i:i + n]))
        i, k = i + n, k + 1
    return out or ([text] if text else [])


class DemoModel:
    """Implements agent_core.providers.model.ModelClient without a network."""

    def __init__(self, workspace: Path, context_window: int = 30_000, max_output_tokens: int = 4_000,
                 seed: int = 0, chunk_delay: float = 0.0, cache_ttl: str = "5m", latency: float = 0.0) -> None:
        if context_window < 1_000:
            raise ValueError(f"context_window must be a whole number >= 1000, got {context_window!r}")
        self.workspace = Path(workspace)
        self.seed = seed
        self.chunk_delay = max(0.0, float(chunk_delay))
        self.latency = max(0.0, float(latency))
        self.info = ModelInfo(provider="demo", model="demo", context_window=context_window,
                              max_output_tokens=max_output_tokens, offline=True, notes=["demo — offline"])
        self._cache = PrefixCache(ttl=cache_ttl)

    def pace(self, chunk_delay: float, latency: float) -> None:
        """Stream like a real model (the TUI's default): `latency` seconds before the first words,
        then `chunk_delay` per few words. Headless and tests keep the instant default."""
        self.chunk_delay = max(0.0, float(chunk_delay))
        self.latency = max(0.0, float(latency))

    # ---- the protocol ----------------------------------------------------------------
    async def stream(self, *, system: str, messages: list[dict], tools: list[dict], max_tokens: int,
                     purpose: str = "main") -> AsyncIterator[StreamItem]:
        errors = validate_history(messages)
        if errors:
            raise ModelError("bad_request", f"invalid request: {errors[0]}", status=400)
        blocks = request_blocks(system, messages, tools)
        total = sum(b.tokens for b in blocks)
        window = self.info.context_window
        if total > window:
            raise ModelError("prompt_too_long", f"prompt is too long: {total} tokens > {window} maximum", status=400)
        key = digest(self.seed, purpose, max_tokens, *(b.key for b in blocks))
        content, stop = self._answer(system, messages, tools, max_tokens, purpose, key, total)
        content, stop = self._fit(content, stop, max_tokens)
        out_tokens = sum(estimate_block(b) for b in content)
        usage = self._cache.usage(blocks, out_tokens, clock.now())
        # n comes from the request, not a counter: unique per request and stable across instances,
        # so a resumed session never repeats the id of the assistant message before it.
        response = ModelResponse(id=f"msg_demo_{int(key[:13], 16)}", model="demo", content=content,
                                 usage=usage, stop_reason=stop)
        if self.latency:
            await asyncio.sleep(self.latency)     # a real model's time to the first token
        for i, block in enumerate(b for b in content if b["type"] == "text"):
            for piece in chunks(block["text"], int(key[i:i + 2], 16)):
                await asyncio.sleep(self.chunk_delay)
                yield TextDelta(piece)
        yield response

    async def count_tokens(self, *, system: str, messages: list[dict], tools: list[dict]) -> int | None:
        return request_tokens(system, messages, tools)

    async def aclose(self) -> None:
        return None

    # ---- answers ---------------------------------------------------------------------
    def _answer(self, system, messages, tools, max_tokens, purpose, key, total: int) -> tuple[list[dict], str]:
        if purpose == "compaction":
            return [{"type": "text", "text": summarize(messages, max_tokens)}], "end_turn"
        if purpose == "memory":
            return [{"type": "text", "text": memory_notes(messages, max_tokens)}], "end_turn"
        offered = set(TOOL_NAMES).intersection(t.get("name") for t in tools or [] if isinstance(t, dict))
        step = Planner(Workspace(self.workspace), parse(messages), self.seed, offered,
                       self.info.context_window, total).next_step()
        content: list[dict] = [{"type": "text", "text": step.text}]
        for k, (name, inp) in enumerate(step.calls):
            content.append({"type": "tool_use", "id": f"toolu_demo_{digest(key, k)[:20]}", "name": name,
                            "input": inp})
        return content, "tool_use" if step.calls else "end_turn"

    @staticmethod
    def _fit(content: list[dict], stop: str, max_tokens: int) -> tuple[list[dict], str]:
        """Cut the answer at max_tokens like the API: text truncated, no tool calls, stop max_tokens."""
        if sum(estimate_block(b) for b in content) <= max_tokens:
            return content, stop
        text = next((b["text"] for b in content if b["type"] == "text"), "") or "…"
        cut = text[:max(1, max_tokens) * 4].rstrip() or text[:1]
        return [{"type": "text", "text": cut}], "max_tokens"
