"""edit_file: replace one exact, unique piece of text. Exactness is the safety: an edit that could
land in two places, or that was written against text the model misremembers, is refused with a
message that says how to fix the call."""
from __future__ import annotations

import re

from agent_core.tools.base import Tool, ToolContext, ToolError, ToolOutput, run_in_thread
from agent_core.tools.files import read_text, require_file
from agent_core.tools.safe_write import check_target, write_atomic
from agent_core.tools.sandbox import resolve

DIFF_CONTEXT = 2
DIFF_MAX_LINES = 40
_NUMBERED = re.compile(r"^\s*\d+\t", re.M)


def diff_summary(shown: str, before: str, after: str, at: int, old_len: int, new_len: int) -> tuple[str, int, int]:
    """A one-hunk unified diff of a single replacement at char `at`, without diffing the whole file."""
    first = before.count("\n", 0, at)                       # 0-based line where the change starts
    old_last = before.count("\n", 0, at + old_len)
    new_last = after.count("\n", 0, at + new_len)
    b_lines, a_lines = before.split("\n"), after.split("\n")
    lo = max(first - DIFF_CONTEXT, 0)
    removed = b_lines[first:old_last + 1]
    added = a_lines[first:new_last + 1]
    ctx_before = b_lines[lo:first]
    ctx_after = b_lines[old_last + 1:old_last + 1 + DIFF_CONTEXT]
    old_n = len(ctx_before) + len(removed) + len(ctx_after)
    new_n = len(ctx_before) + len(added) + len(ctx_after)
    body = ([" " + s for s in ctx_before] + ["-" + s for s in removed] + ["+" + s for s in added]
            + [" " + s for s in ctx_after])
    if len(body) > DIFF_MAX_LINES:
        body = body[:DIFF_MAX_LINES] + [f"… {len(body) - DIFF_MAX_LINES} more diff lines"]
    head = [f"--- {shown}", f"+++ {shown}", f"@@ -{lo + 1},{old_n} +{lo + 1},{new_n} @@"]
    return "\n".join(head + body), len(removed), len(added)


class EditFileTool(Tool):
    name = "edit_file"
    description = (
        "Replace one exact piece of text in a file. `old_string` must match the file exactly once, "
        "including whitespace and indentation (copy it from read_file output without the line-number "
        "prefix); include a few surrounding lines to make it unique. `new_string` replaces it. "
        "Returns a small diff. To create a file or replace all of it, use write_file."
    )
    input_schema = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Path relative to the workspace."},
            "old_string": {"type": "string", "description": "Exact text to replace; must occur exactly once."},
            "new_string": {"type": "string", "description": "Text to put in its place."},
        },
        "required": ["path", "old_string", "new_string"],
        "additionalProperties": False,
    }

    async def run(self, input: dict, ctx: ToolContext) -> ToolOutput:  # noqa: A002
        path = resolve(ctx, input["path"])
        shown = ctx.rel(path)
        old, new = input["old_string"], input["new_string"]
        if not old:
            raise ToolError("old_string is empty; give the exact text to replace "
                            "(to create a file or replace all of it, use write_file).")
        if old == new:
            raise ToolError("old_string and new_string are identical; there is nothing to change.")

        def edit(stop) -> ToolOutput:
            require_file(path, shown, ctx)
            check_target(path, shown)              # a hard link is refused before any work
            before = read_text(path, shown)
            o, n = old, new
            count = before.count(o)
            if count == 0 and "\r\n" in before and "\r\n" not in o and "\n" in o:
                o, n = o.replace("\n", "\r\n"), n.replace("\n", "\r\n")   # the file uses CRLF
                count = before.count(o)
            if count == 0:
                hint = ""
                if _NUMBERED.search(old):
                    hint = " It looks like old_string includes read_file's line-number prefixes; leave them out."
                raise ToolError(f"old_string was not found in '{shown}'. It must match the file exactly, "
                                f"including whitespace and indentation.{hint} Use read_file to see the "
                                f"current text, then retry.")
            if count > 1:
                raise ToolError(f"old_string matches {count} places in '{shown}'; it must match exactly one. "
                                f"Include more surrounding lines in old_string so it is unique.")
            at = before.index(o)
            if ctx.history is not None:
                ctx.history.before_change(path, shown)
            after = before[:at] + n + before[at + len(o):]
            write_atomic(path, after.encode("utf-8"), shown, stop)
            diff, removed, added = diff_summary(shown, before, after, at, len(o), len(n))
            first = before.count("\n", 0, at) + 1
            return ToolOutput(f"Edited '{shown}' at line {first}: {removed} line(s) replaced by {added}.\n{diff}",
                              meta={"path": shown, "line": first, "removed": removed, "added": added})

        out = await run_in_thread(edit)
        return out
