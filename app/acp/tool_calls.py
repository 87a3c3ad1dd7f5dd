"""A tool call as ACP shows it: a kind the editor picks an icon by, a title, the file it touches.

The model's input is someone else's text: it goes out as JSON data (`rawInput`, the title), never
interpreted; a path is only joined to the workspace for display, never opened here.
"""
from __future__ import annotations

import json
import os
from typing import Any

from acp.helpers import text_block, tool_content
from acp.schema import ToolCallLocation, ToolCallProgress, ToolCallStart, ToolKind

from agent_core import events as ev

KINDS: dict[str, ToolKind] = {
    "read_file": "read", "glob": "search", "grep": "search", "write_file": "edit", "edit_file": "edit",
    "bash": "execute", "compact": "other", "context_status": "think",
}
TITLE_INPUT_CHARS = 120      # an editor's tool row is one line: the input is cut to this


def kind_of(name: str) -> ToolKind:
    return KINDS.get(name, "other")


def title_of(name: str, tool_input: dict) -> str:
    """`bash: ls -la`, `read_file: src/app.py`: the name and the input's main field, one line."""
    main = next((tool_input[k] for k in ("command", "path", "pattern", "focus") if isinstance(tool_input.get(k), str)),
                None)
    shown = main if main is not None else (json.dumps(tool_input, ensure_ascii=False) if tool_input else "")
    shown = " ".join(shown.split())
    if len(shown) > TITLE_INPUT_CHARS:
        shown = shown[:TITLE_INPUT_CHARS - 1] + "…"
    return f"{name}: {shown}" if shown else name


def locations_of(tool_input: dict, workspace: str) -> list[ToolCallLocation] | None:
    """The file a file tool names, as an absolute path (editors follow along); None otherwise."""
    path = tool_input.get("path")
    if not isinstance(path, str) or not path or "\x00" in path:
        return None
    return [ToolCallLocation(path=os.path.normpath(os.path.join(workspace, path)))]


def started(e: ev.ToolCall, workspace: str) -> ToolCallStart:
    return ToolCallStart(session_update="tool_call", tool_call_id=e.id, title=title_of(e.name, e.input),
                         kind=kind_of(e.name), status="pending", raw_input=e.input,
                         locations=locations_of(e.input, workspace))


def finished(e: ev.ToolResult) -> ToolCallProgress:
    """The result: `completed`, or `failed` for an error or a denial (whose text says which)."""
    return ToolCallProgress(session_update="tool_call_update", tool_call_id=e.id,
                            status="failed" if e.is_error else "completed",
                            content=[tool_content(text_block(e.preview))],
                            raw_output={"preview": e.preview, "size": e.size, "isError": e.is_error})


def replayed_call(block: dict[str, Any], workspace: str) -> ToolCallStart:
    """A tool call of a loaded session's history (load_session): shown as it ended."""
    tool_input = block.get("input")
    tool_input = tool_input if isinstance(tool_input, dict) else {}
    name = str(block.get("name") or "tool")
    return ToolCallStart(session_update="tool_call", tool_call_id=str(block.get("id") or ""),
                         title=title_of(name, tool_input), kind=kind_of(name), status="completed",
                         raw_input=tool_input, locations=locations_of(tool_input, workspace))


def replayed_result(block: dict[str, Any], text: str) -> ToolCallProgress:
    return ToolCallProgress(session_update="tool_call_update", tool_call_id=str(block.get("tool_use_id") or ""),
                            status="failed" if block.get("is_error") else "completed",
                            content=[tool_content(text_block(text))])
