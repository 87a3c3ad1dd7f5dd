"""grep: search file contents with a Python regular expression; `file:line:text` output, capped."""
from __future__ import annotations

import re
from pathlib import Path

from .base import Tool, ToolContext, ToolError, ToolOutput, run_in_thread
from .files import SNIFF_BYTES, looks_binary
from .sandbox import resolve_path
from .walk import glob_regex, walk

LINE_CHARS = 300


class GrepTool(Tool):
    name = "grep"
    read_only = True
    description = (
        "Search file contents in the workspace with a Python regular expression and list matching "
        "lines as `path:line:text`. Optional `path` (a file or folder, default the whole workspace) "
        "and `glob` (file filter: '*.py' matches by file name anywhere, 'src/**/*.ts' by path). "
        "Use (?i) at the start of the pattern for case-insensitive search; escape regex characters "
        "such as ( [ . to match them literally. Binary files, .git and .venv are skipped; output "
        "is capped, so narrow the search when it says so."
    )
    input_schema = {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "Python regular expression."},
            "path": {"type": "string", "description": "File or folder to search, relative to the workspace."},
            "glob": {"type": "string", "description": "Only search files matching this glob, e.g. '*.py'."},
        },
        "required": ["pattern"],
        "additionalProperties": False,
    }

    async def run(self, input: dict, ctx: ToolContext) -> ToolOutput:  # noqa: A002
        try:
            rx = re.compile(input["pattern"])
        except re.error as e:
            raise ToolError(f"invalid regular expression {input['pattern']!r}: {e}. "
                            f"Escape special characters (e.g. \\( or \\.) to match them literally.") from e
        where = resolve_path(ctx.workspace, input.get("path") or ".")
        if not where.exists():
            raise ToolError(f"'{input.get('path')}' does not exist in the workspace {ctx.workspace}. "
                            f"Use glob to find the right path.")
        file_glob = input.get("glob") or None
        name_rx = glob_regex(file_glob) if file_glob else None
        by_path = bool(file_glob and "/" in file_glob)
        cap_lines, cap_chars = ctx.list_cap, ctx.output_cap

        def search(stop) -> tuple[list[str], int, bool]:
            rows: list[str] = []
            size = 0
            searched = 0
            if where.is_file():
                files = [(ctx.rel(where), where)]
            else:
                files = ((rel, p) for rel, p, is_dir in walk(ctx.workspace, where, ctx.skip_dirs, stop)
                         if not is_dir)
            for rel, p in files:
                if name_rx and not name_rx.match(rel if by_path else p.name):
                    continue
                if stop.is_set():
                    break
                hits = _search_file(p, rx)
                if hits is None:
                    continue
                searched += 1
                for lineno, text in hits:
                    row = f"{rel}:{lineno}:{text}"
                    if len(rows) >= cap_lines or size + len(row) > cap_chars:
                        return rows, searched, True
                    rows.append(row)
                    size += len(row) + 1
            return rows, searched, False

        rows, searched, capped = await run_in_thread(search)
        meta = {"matches": len(rows), "files_searched": searched, "capped": capped}
        if not rows:
            scope = f" in '{input['path']}'" if input.get("path") else ""
            filt = f" (files matching '{file_glob}')" if file_glob else ""
            return ToolOutput(f"No matches for /{input['pattern']}/{scope}{filt}; {searched} files searched.",
                              meta=meta)
        text = "\n".join(rows)
        if capped:
            text += (f"\n[stopped after {len(rows)} matching lines; narrow the pattern or pass `path` / `glob` "
                     f"to see the rest]")
        return ToolOutput(text, meta=meta)


def _search_file(path: Path, rx: re.Pattern[str]) -> list[tuple[int, str]] | None:
    """Matching (line number, text) pairs; None for a binary, unreadable or special file (a FIFO
    would block the read forever)."""
    try:
        if not path.is_file():
            return None
        with path.open("rb") as f:
            if looks_binary(f.read(SNIFF_BYTES)):
                return None
            f.seek(0)
            hits = []
            for lineno, raw in enumerate(f, 1):
                line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
                if rx.search(line):
                    hits.append((lineno, line if len(line) <= LINE_CHARS else line[:LINE_CHARS] + " …"))
            return hits
    except OSError:
        return None
