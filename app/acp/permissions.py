"""ctxtui's permission asks as session/request_permission: allow once, always, reject.

The loop's PermissionRequest carries its own answer (agent_core/events.py); the client's choice is
put on it: allow_once -> allow, allow_always -> always (for the session, restored on resume, as
in the TUI), anything else — reject, a cancelled prompt, an option we never offered, a client
that failed to answer — is deny. A denial is a tool result the model reads.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any

from acp import RequestError
from acp.schema import PermissionOption, ToolCallUpdate

from agent_core import events as ev
from app.acp import tool_calls

OPTIONS = [PermissionOption(option_id="allow", name="Allow once", kind="allow_once"),
           PermissionOption(option_id="always", name="Always allow this tool in this session", kind="allow_always"),
           PermissionOption(option_id="deny", name="Reject", kind="reject_once")]
DECISIONS = {"allow": "allow", "always": "always", "deny": "deny"}

log = logging.getLogger("ctxtui.acp")


def decision_of(response: Any) -> str:
    """allow | always | deny from a RequestPermissionResponse."""
    outcome = getattr(response, "outcome", None)
    if getattr(outcome, "outcome", None) != "selected":
        return "deny"
    return DECISIONS.get(str(getattr(outcome, "option_id", "")), "deny")


async def ask(conn: Any, session_id: str, req: ev.PermissionRequest, workspace: str) -> None:
    """Ask the client and answer the request; never raises but for cancellation (the turn was
    cancelled: the loop no longer waits)."""
    title = tool_calls.title_of(req.name, req.input)
    if req.note:          # where bash will run: in the OS sandbox, or unconfined
        title = f"{title} — {req.note}"
    call = ToolCallUpdate(tool_call_id=req.id, title=title,
                          kind=tool_calls.kind_of(req.name), status="pending", raw_input=req.input,
                          locations=tool_calls.locations_of(req.input, workspace))
    try:
        response = await conn.request_permission(session_id=session_id, tool_call=call, options=OPTIONS)
    except asyncio.CancelledError:
        req.answer("deny")
        raise
    except (RequestError, ConnectionError, ValueError) as e:
        log.warning("the client did not answer a permission request (%s); the tool call is denied",
                    type(e).__name__)
        req.answer("deny")
        return
    req.answer(decision_of(response))
