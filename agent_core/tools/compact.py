"""compact: the model asks for the conversation to be compacted. The tool only signals; the loop
runs the compaction after the current tool batch, so every call in the batch gets
its result first and the history stays valid."""
from __future__ import annotations

from agent_core.tools.base import Tool, ToolContext, ToolOutput


class CompactTool(Tool):
    name = "compact"
    description = (
        "Ask for the conversation so far to be summarised to free context space. Use it when the "
        "context is filling up (see context_status) and older details (long outputs, finished "
        "subtasks) are no longer needed. Optional `focus` names what the summary must keep in detail: "
        "the task, files, exact identifiers. Compaction runs after the current tool calls finish; "
        "then continue the task from the summary."
    )
    input_schema = {
        "type": "object",
        "properties": {"focus": {"type": "string",
                                 "description": "What the summary should keep in detail (optional)."}},
        "additionalProperties": False,
    }

    async def run(self, input: dict, ctx: ToolContext) -> ToolOutput:  # noqa: A002
        focus = (input.get("focus") or "").strip() or None
        text = "Compaction will run after this tool batch"
        text += f", focusing on: {focus}." if focus else "."
        return ToolOutput(text, meta={"compact_requested": True, "focus": focus})
