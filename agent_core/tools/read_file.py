"""read_file: numbered lines (`N<tab>text`, the number unpadded: `cat -n`'s six columns made a
20 KB read 4-5% larger), a window of a file at a time, bounded by line count, line length and
total size so a result never needs the tool-result budget."""
from __future__ import annotations

import threading
from pathlib import Path

from agent_core.tools.base import Tool, ToolContext, ToolError, ToolOutput, run_in_thread
from agent_core.tools.files import SNIFF_BYTES, looks_binary, open_regular, require_file
from agent_core.tools.sandbox import resolve


def _count_rest(f, stop: threading.Event, chunk: int = 1 << 20) -> int:
    """Lines left in a binary file object, counted in chunks (cheap even for big files)."""
    n = 0
    last = b"\n"
    while not stop.is_set() and (block := f.read(chunk)):
        n += block.count(b"\n")
        last = block[-1:]
    return n + (last != b"\n")


def _lines(f, max_bytes: int):
    """(line bytes, whole?) without ever holding more than `max_bytes` of one line: a minified
    file with one 50 MB line costs no more than a short one."""
    while raw := f.readline(max_bytes):
        if raw.endswith(b"\n") or len(raw) < max_bytes:
            yield raw, True
            continue
        while more := f.readline(1 << 20):     # skip the rest of the long line
            if more.endswith(b"\n"):
                break
        yield raw, False


class ReadFileTool(Tool):
    name = "read_file"
    read_only = True
    description = (
        "Read a text file from the workspace. Each line comes as its number, a tab, then the line (the "
        "number and the tab are not part of the file: leave them out when you edit). Reads up to 2000 "
        "lines from `offset` (1-based line number, default 1); pass `offset` and `limit` to read a long file in parts. "
        "Very long lines are cut. Binary files and folders are refused (use glob to list a folder)."
    )
    input_schema = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Path relative to the workspace."},
            "offset": {"type": "integer", "minimum": 1, "description": "First line to read, 1-based."},
            "limit": {"type": "integer", "minimum": 1, "description": "How many lines to read (max 2000)."},
        },
        "required": ["path"],
        "additionalProperties": False,
    }

    async def run(self, input: dict, ctx: ToolContext) -> ToolOutput:  # noqa: A002
        path = resolve(ctx, input["path"], spill_ok=True)
        shown = ctx.rel(path)
        offset = input.get("offset", 1)
        limit = min(input.get("limit", ctx.read_max_lines), ctx.read_max_lines)
        out = await run_in_thread(lambda stop: self._read(path, shown, offset, limit, ctx, stop))
        return out

    @staticmethod
    def _read(path: Path, shown: str, offset: int, limit: int, ctx: ToolContext,
              stop: threading.Event) -> ToolOutput:
        require_file(path, shown, ctx)
        lines: list[str] = []
        size = 0
        cut_lines = 0
        stopped_by_size = False
        with open_regular(path, shown) as f:
            if looks_binary(f.read(SNIFF_BYTES)):
                raise ToolError(f"'{shown}' is a binary file; read_file only shows text. "
                                f"Use bash (e.g. `file`, `xxd | head`) to inspect it.")
            f.seek(0)
            lineno = 0            # lines consumed from the file so far
            stopped = False
            for raw, whole in _lines(f, 4 * ctx.read_max_line_chars + 4):
                lineno += 1
                if stop.is_set():
                    stopped = True
                    break
                if lineno < offset:
                    continue
                if len(lines) >= limit:
                    stopped = True
                    break
                text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
                if len(text) > ctx.read_max_line_chars or not whole:
                    text = text[:ctx.read_max_line_chars] + " … [line cut]"
                    cut_lines += 1
                row = f"{lineno}\t{text}"
                if lines and size + len(row) + 1 > ctx.read_max_chars:
                    stopped = stopped_by_size = True
                    break
                lines.append(row)
                size += len(row) + 1
            total = lineno + (_count_rest(f, stop) if stopped else 0)
        meta = {"path": shown, "offset": offset, "lines_shown": len(lines), "total_lines": total}
        if not lines:
            if total == 0:
                return ToolOutput(f"'{shown}' is empty.", meta=meta)
            return ToolOutput(f"'{shown}' has {total} lines; offset {offset} is past the end. "
                              f"Use an offset between 1 and {total}.", meta=meta)
        first, last = offset, offset + len(lines) - 1
        body = "\n".join(lines)
        notes = []
        if last < total and stopped_by_size:
            notes.append(f"[showing lines {first}-{last} of {total} (output size limit): truncated at "
                         f"{ctx.read_max_chars:,} characters; read with offset/limit to see the rest, "
                         f"next offset={last + 1}]")
        elif last < total:
            notes.append(f"[showing lines {first}-{last} of {total} (line limit); "
                         f"read on with offset={last + 1}]")
        if cut_lines:
            notes.append(f"[{cut_lines} long line(s) cut at {ctx.read_max_line_chars} chars]")
        return ToolOutput(body + ("\n" + "\n".join(notes) if notes else ""), meta=meta)

