"""glob: find paths by pattern, sorted and capped, relative to the workspace."""
from __future__ import annotations

import os

from agent_core.tools.base import Tool, ToolContext, ToolError, ToolOutput, run_in_thread
from agent_core.tools.sandbox import resolve
from agent_core.tools.walk import glob_regex, literal_prefix, walk


class GlobTool(Tool):
    name = "glob"
    read_only = True
    description = (
        "List files and folders in the workspace whose path matches a glob pattern, sorted, relative "
        "to the workspace (folders end with '/'). Patterns match from the workspace root: `*` stays "
        "within one folder, `**` spans any number of folders, `{a,b}` gives alternatives. Examples: "
        "'**/*.py' (every Python file), 'src/*' (what is in src), 'tests/**/test_*.{py,txt}'. "
        ".git and .venv are skipped. Use grep to search file contents."
    )
    input_schema = {
        "type": "object",
        "properties": {"pattern": {"type": "string", "description": "Glob pattern, e.g. '**/*.py'."}},
        "required": ["pattern"],
        "additionalProperties": False,
    }

    async def run(self, input: dict, ctx: ToolContext) -> ToolOutput:  # noqa: A002
        pattern = input["pattern"].strip()
        if not pattern:
            raise ToolError("pattern is empty; e.g. '**/*.py' lists every Python file.")
        root = str(ctx.workspace)
        if os.path.isabs(pattern):
            if pattern == root or pattern.startswith(root + "/"):
                pattern = pattern[len(root):].lstrip("/") or "*"
            else:
                raise ToolError(f"pattern '{pattern}' is outside the workspace {root}; patterns are "
                                f"relative to the workspace, e.g. '**/*.py'.")
        if ".." in pattern.split("/"):
            raise ToolError(f"pattern '{pattern}' uses '..'; tools only see the workspace {root}. "
                            f"Write patterns relative to it.")
        rx = glob_regex(pattern)
        start = resolve(ctx, literal_prefix(pattern) or ".")

        def find(stop) -> tuple[list[str], int]:
            hits: list[str] = []
            total = 0
            if not start.is_dir():
                return hits, 0
            for rel, _p, is_dir in walk(ctx.workspace, start, ctx.skip_dirs, stop, ctx.protected):
                if rx.match(rel):
                    total += 1
                    if len(hits) < ctx.list_cap:
                        hits.append(rel + "/" if is_dir else rel)
            return hits, total

        hits, total = await run_in_thread(find)
        hits.sort()
        meta = {"matches": total, "shown": len(hits)}
        if not hits:
            hint = "" if "/" in pattern else f" Patterns match from the workspace root: try '**/{pattern}'."
            return ToolOutput(f"No paths match '{pattern}'.{hint}", meta=meta)
        text = "\n".join(hits)
        if total > len(hits):
            text += f"\n[showing the first {len(hits)} of {total} matches; use a narrower pattern]"
        return ToolOutput(text, meta=meta)
