"""write_file: create or replace a whole file (parent folders are created, inside the workspace),
through `write_atomic`, so a failed write never leaves a half-written file."""
from __future__ import annotations

from agent_core.tools.base import Tool, ToolContext, ToolOutput, run_in_thread
from agent_core.tools.safe_write import check_target, write_atomic
from agent_core.tools.sandbox import resolve


class WriteFileTool(Tool):
    name = "write_file"
    description = (
        "Create a file, or replace a file's whole content, with `content` exactly as given (UTF-8). "
        "Missing parent folders are created. To change part of an existing file, prefer edit_file: "
        "it is safer and cheaper than rewriting the file."
    )
    input_schema = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Path relative to the workspace."},
            "content": {"type": "string", "description": "The complete new content of the file."},
        },
        "required": ["path", "content"],
        "additionalProperties": False,
    }

    async def run(self, input: dict, ctx: ToolContext) -> ToolOutput:  # noqa: A002
        path = resolve(ctx, input["path"])
        shown = ctx.rel(path)
        content: str = input["content"]

        def write(stop) -> bool:
            check_target(path, shown)            # refuse a folder, FIFO or hard link before any mkdir
            if ctx.history is not None:
                ctx.history.before_change(path, shown)
            path.parent.mkdir(parents=True, exist_ok=True)
            return write_atomic(path, content.encode("utf-8"), shown, stop)

        existed = await run_in_thread(write)
        n_lines = content.count("\n") + (bool(content) and not content.endswith("\n"))
        n_bytes = len(content.encode("utf-8"))
        verb = "Overwrote" if existed else "Created"
        return ToolOutput(f"{verb} '{shown}' ({n_lines} lines, {n_bytes} bytes).",
                          meta={"path": shown, "created": not existed, "bytes": n_bytes})
