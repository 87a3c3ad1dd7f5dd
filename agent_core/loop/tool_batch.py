"""One batch of the model's tool calls: each asked of the permission policy in order, the allowed
ones run together, and their results gathered into one user message in the order asked (a denied
call is answered with why). The turn's bookkeeping keeps each result as it lands, so a cancel
can answer the rest."""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Callable

from compaction.entry import tool_result_block

from agent_core import events as ev
from agent_core.loop.seams import Ask, Permissions, Tools
from agent_core.loop.turn_state import TurnState
from agent_core.sessions.valid_text import valid_text
from agent_core.tools.base import ToolContext


@dataclass
class Batch:
    """What the batch left: the results message's blocks, and a compaction a tool asked for."""
    blocks: list[dict]
    compact_requested: bool = False
    compact_focus: str | None = None


async def run_batch(tool_uses: list[dict], turn: TurnState, *, tools: Tools, permissions: Permissions,
                    ctx: ToolContext, ask: Ask | None, emit: Callable[[ev.Event], None]) -> Batch:
    turn.pending_tool_uses = tool_uses
    turn.done_results = {}
    batch = Batch(blocks=[])
    allowed: list[dict] = []
    for tu in tool_uses:
        emit(ev.ToolCall(id=tu["id"], name=tu["name"], input=tu.get("input") or {}))
        decision = await permissions.check(tu["name"], tu.get("input") or {}, ask, request_id=tu["id"])
        if decision.allowed:
            allowed.append(tu)
        else:
            msg = decision.message or f"Permission to run {tu['name']} was denied."
            turn.done_results[tu["id"]] = tool_result_block(tu["id"], msg, is_error=True)
            emit(ev.ToolResult(id=tu["id"], name=tu["name"], preview=msg[:500], size=len(msg), is_error=True))

    async def one(tu: dict) -> None:
        out = await tools.execute(tu["name"], tu.get("input") or {}, ctx)
        content = valid_text(out.content or "")   # a file name that is not UTF-8, say
        turn.done_results[tu["id"]] = tool_result_block(tu["id"], content or "(no output)", is_error=out.is_error)
        emit(ev.ToolResult(id=tu["id"], name=tu["name"], preview=content[:500], size=len(content),
                           is_error=out.is_error))
        if out.meta.get("compact_requested"):
            batch.compact_requested, batch.compact_focus = True, out.meta.get("focus")

    await asyncio.gather(*(one(tu) for tu in allowed))
    batch.blocks = [turn.done_results[tu["id"]] for tu in tool_uses]
    turn.pending_tool_uses = []
    return batch
