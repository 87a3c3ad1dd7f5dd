"""The demo model's emulation of the API's server compaction (`compact_20260112`), so the server and
hybrid engines can be watched offline: a request over the plan's trigger is summarized (the demo's
own extractive summary) into a `compaction` block that opens the answer — or is the whole answer,
with `pause_after_compaction` — and the usage carries the compaction step's own iteration, as the
API reports it. A request is read from its last compaction block on, as the API reads it.
Context editing (clearing old tool results) is not emulated: the demo reports no applied edits.

`ServerDemo` wraps a `DemoModel` (everything else is the demo's own), so the demo itself stays
unaware of the server engines.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, AsyncIterator

from compaction.accounting.tokens import estimate_text

from agent_core.events import CompactionDelta, CompactionEnded, CompactionStarted
from agent_core.providers.demo.cache import request_tokens
from agent_core.providers.demo.model import DemoModel
from agent_core.providers.demo.summary import summarize
from agent_core.providers.demo.workspace import digest
from agent_core.providers.model import ModelResponse, StreamItem
from agent_core.providers.server_context import COMPACTION_BLOCK, ServerPlan


@dataclass
class DemoCompaction:
    block: dict                  # the compaction block the answer opens with
    usage: dict                  # the compaction step's usage (an `iterations` entry)
    messages: list[dict]         # what the model is shown after it: the block alone
    pause: bool


def from_last_compaction(messages: list[dict]) -> list[dict]:
    """The messages the model is shown: from the last compaction block with a summary on."""
    for i in range(len(messages) - 1, -1, -1):
        content = messages[i].get("content")
        if not isinstance(content, list):
            continue
        for j in range(len(content) - 1, -1, -1):
            b = content[j]
            if isinstance(b, dict) and b.get("type") == COMPACTION_BLOCK and b.get("content"):
                return [{**messages[i], "content": content[j:]}, *messages[i + 1:]]
    return messages


def compact_if_due(plan: ServerPlan, system: str, messages: list[dict], tools: list[dict], max_tokens: int,
                   key: str) -> DemoCompaction | None:
    """The server's compaction of this request, when it is over the plan's trigger; else None."""
    shown = from_last_compaction(messages)
    size = request_tokens(system, shown, tools)
    if size <= plan.compact_trigger:
        return None
    summary = summarize(shown, max_tokens)
    block = {"type": COMPACTION_BLOCK, "content": summary, "encrypted_content": f"demo-{key[:40]}",
             "signature": f"demo-sig-{key[40:56] or key[:16]}"}
    usage = {"type": "compaction", "input_tokens": size, "cache_creation_input_tokens": 0,
             "cache_read_input_tokens": 0, "output_tokens": estimate_text(summary)}
    return DemoCompaction(block, usage, [{"role": "assistant", "content": [block]}], plan.pause_after_compaction)


def live_events(done: DemoCompaction, started: float, ended: float) -> list:
    """The live events a front-end shows while the server summarizes (the loop fills in the size)."""
    summary = done.block["content"]
    return [CompactionStarted(purpose="server", tokens_before=0, started=started), CompactionDelta(text=summary),
            CompactionEnded(ok=True, duration_s=round(ended - started, 3), chars=len(summary))]


class ServerDemo:
    """The demo model with the server engine's compaction emulated (see the module docstring)."""

    def __init__(self, demo: DemoModel) -> None:
        self.demo = demo
        self.info = demo.info
        self.server: ServerPlan | None = None      # set by the loop's factory for server / hybrid

    def __getattr__(self, name: str) -> Any:      # pace(), workspace, ...: the demo's own
        return getattr(self.demo, name)

    async def stream(self, *, system: str, messages: list[dict], tools: list[dict], max_tokens: int,
                     purpose: str = "main") -> AsyncIterator[StreamItem]:
        shown = from_last_compaction(messages)
        done = None
        if self.server is not None and purpose == "main":
            key = digest(self.demo.seed, "server", *(str(m) for m in shown))
            started = time.time()
            done = compact_if_due(self.server, system, messages, tools, max_tokens, key)
            if done is not None:
                for e in live_events(done, started, time.time()):
                    yield e
        response = None
        if done is None or not done.pause:
            async for item in self.demo.stream(system=system, messages=shown, tools=tools, max_tokens=max_tokens,
                                               purpose=purpose):
                if isinstance(item, ModelResponse):
                    response = item
                else:
                    yield item
        if done is None:
            if response is not None:
                if self.server is not None:
                    response.server = {"context_management": {"applied_edits": []}, "iterations": []}
                yield response
            return
        yield self._compacted(done, response, system, tools)

    def _compacted(self, done: DemoCompaction, response: ModelResponse | None, system: str,
                   tools: list[dict]) -> ModelResponse:
        """The answer opening with the compaction block; its usage is what the model read after it."""
        after = request_tokens(system, done.messages, tools)
        out = response.usage.get("output_tokens", 0) if response is not None else 0
        usage = {"input_tokens": after if response is not None else 0, "output_tokens": out,
                 "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                 "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0}}
        iterations = [done.usage]
        if response is not None:
            iterations.append({"type": "message", "input_tokens": after, "output_tokens": out,
                               "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0})
        content = [done.block, *(response.content if response is not None else [])]
        mid = response.id if response is not None else "msg_demo_c" + done.block["encrypted_content"][5:21]
        return ModelResponse(id=mid, model="demo", content=content, usage=usage,
                             stop_reason=response.stop_reason if response is not None else "compaction",
                             server={"context_management": {"applied_edits": []}, "iterations": iterations})
