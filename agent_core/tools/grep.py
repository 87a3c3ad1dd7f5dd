"""grep: search file contents with an RE2 regular expression; `file:line:text` output, capped.

RE2 matches in time linear in the text, so no pattern can make a search backtrack for ever
(`(a+)+$` on 'aaaa…!' takes a day with a backtracking engine such as Python's `re`, which also
holds the GIL and so cannot be stopped). The price is a few Python features RE2 lacks; the error
for those says what to write instead."""
from __future__ import annotations

import os
import re
import stat
import threading
from collections.abc import Iterable
from pathlib import Path

import re2

from agent_core.tools.base import Tool, ToolContext, ToolError, ToolOutput, run_in_thread
from agent_core.tools.files import SNIFF_BYTES, HardLinked, is_regular_file, looks_binary, open_regular
from agent_core.tools.sandbox import is_inside, resolve
from agent_core.tools.walk import glob_regex, walk

LINE_CHARS = 300
LINE_WINDOW = 1 << 20        # bytes of a line held at a time (a longer line is searched in windows)
WINDOW_OVERLAP = 4096        # bytes each window repeats of the one before

_BACKREF = re.compile(r"(?<!\\)(?:\\\\)*\\[1-9]|\(\?P=")
_LOOKAROUND = re.compile(r"\(\?<?[=!]")
_UNSUPPORTED = (
    (_BACKREF, "RE2 has no backreferences (\\1, (?P=name)): search for the repeated part itself, "
               "or run `grep -P` through bash"),
    (_LOOKAROUND, "RE2 has no lookaround ((?=…), (?!…), (?<=…), (?<!…)): match the surrounding text "
                  "itself (e.g. 'foo(bar)' rather than 'foo(?=bar)'), or run `grep -P` through bash"),
    (re.compile(r"\\Z"), "RE2 writes end-of-text as \\z, not \\Z"),
)


def _options() -> re2.Options:
    opts = re2.Options()
    opts.log_errors = False          # the error goes to the model, not to our stderr
    return opts


def compile_pattern(pattern: str):
    """The compiled RE2 pattern, or a ToolError that says what to write instead."""
    try:
        return re2.compile(pattern, _options())
    except re2.error as e:
        detail = e.args[0].decode(errors="replace") if e.args and isinstance(e.args[0], bytes) else str(e)
        advice = next((msg for rx, msg in _UNSUPPORTED if rx.search(pattern)),
                      "escape special characters (e.g. \\( or \\.) to match them literally")
        raise ToolError(f"invalid regular expression {pattern!r}: {detail}. grep uses RE2 syntax, which "
                        f"never backtracks; {advice}.") from None


class GrepTool(Tool):
    name = "grep"
    read_only = True
    description = (
        "Search file contents in the workspace with a regular expression and list matching lines as "
        "`path:line:text`. The syntax is RE2's: like Python's, but without backreferences or lookaround "
        "(and \\z, not \\Z). Optional `path` (a file or folder, default the whole workspace) "
        "and `glob` (file filter: '*.py' matches by file name anywhere, 'src/**/*.ts' by path). "
        "Use (?i) at the start of the pattern for case-insensitive search; escape regex characters "
        "such as ( [ . to match them literally. Binary files, .git and .venv are skipped; output "
        "is capped, so narrow the search when it says so."
    )
    input_schema = {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "Regular expression (RE2 syntax)."},
            "path": {"type": "string", "description": "File or folder to search, relative to the workspace."},
            "glob": {"type": "string", "description": "Only search files matching this glob, e.g. '*.py'."},
        },
        "required": ["pattern"],
        "additionalProperties": False,
    }

    async def run(self, input: dict, ctx: ToolContext) -> ToolOutput:  # noqa: A002
        rx = compile_pattern(input["pattern"])
        where = resolve(ctx, input.get("path") or ".", spill_ok=True)
        is_file = is_regular_file(where, input.get("path") or ".", ctx)
        root = ctx.workspace if is_inside(ctx.workspace, where) else where.parent   # the spill folder
        file_glob = input.get("glob") or None
        name_rx = glob_regex(file_glob) if file_glob else None
        by_path = bool(file_glob and "/" in file_glob)
        cap_lines, cap_chars = ctx.list_cap, ctx.output_cap

        linked: list[str] = []       # files left out: more than one hard link (files.open_regular)

        def search(stop) -> tuple[list[str], int, bool]:
            rows: list[str] = []
            size = 0
            searched = 0
            files: Iterable[tuple[str, Path]]
            if is_file:
                files = [(ctx.rel(where), where)]
            else:
                files = ((rel, p) for rel, p, is_dir in walk(root, where, ctx.skip_dirs, stop, ctx.protected)
                         if not is_dir)
            for rel, p in files:
                if name_rx and not name_rx.match(rel if by_path else p.name):
                    continue
                if stop.is_set():
                    break
                try:
                    hits = _search_file(p, rx, stop)
                except HardLinked as e:
                    if is_file:         # the file asked for: the refusal, with its reason, is the answer
                        raise HardLinked(rel, e.links) from None
                    linked.append(rel)
                    continue
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
        skipped = _linked_note(linked)
        if linked:
            meta["skipped_hard_links"] = len(linked)
        if not rows:
            scope = f" in '{input['path']}'" if input.get("path") else ""
            filt = f" (files matching '{file_glob}')" if file_glob else ""
            return ToolOutput(f"No matches for /{input['pattern']}/{scope}{filt}; {searched} files searched."
                              + skipped, meta=meta)
        text = "\n".join(rows)
        if capped:
            text += (f"\n[stopped after {len(rows)} matching lines; narrow the pattern or pass `path` / `glob` "
                     f"to see the rest]")
        return ToolOutput(text + skipped, meta=meta)


def _linked_note(linked: list[str]) -> str:
    """Why some files were not searched, and what to do: empty when none were left out."""
    if not linked:
        return ""
    names = ", ".join(linked[:5]) + (f" and {len(linked) - 5} more" if len(linked) > 5 else "")
    return (f"\n[{len(linked)} file(s) not searched because they have more than one hard link: {names}. "
            f"Their other names cannot be found and may be outside the workspace; ask the user, or copy "
            f"one with bash and search the copy]")


def _search_file(path: Path, rx, stop: threading.Event) -> list[tuple[int, str]] | None:
    """Matching (line number, text) pairs; None for a binary, unreadable or special file (a FIFO
    would block the read forever, so only regular files are opened). Stops between lines when the
    call is cancelled or past its deadline. Raises HardLinked for a file with other names.

    Memory stays bounded whatever the file holds: a line is read at most LINE_WINDOW bytes at a
    time, and a longer one (a minified bundle, a 1 GiB log line) is searched window by window
    (see `_search_long_line`) instead of being held whole."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        with open_regular(os.path.realpath(path) if os.path.islink(path) else path, str(path)) as f:
            if looks_binary(f.read(SNIFF_BYTES)):
                return None
            f.seek(0)
            hits = []
            lineno = 0
            while raw := f.readline(LINE_WINDOW):
                lineno += 1
                if stop.is_set():
                    return None
                if raw.endswith(b"\n") or len(raw) < LINE_WINDOW:
                    raw = raw.rstrip(b"\r\n")
                    if rx.search(raw):
                        line = raw.decode("utf-8", errors="replace")
                        hits.append((lineno, line if len(line) <= LINE_CHARS else line[:LINE_CHARS] + " …"))
                    continue
                shown = _search_long_line(f, raw, rx, stop)
                if stop.is_set():
                    return None
                if shown is not None:
                    hits.append((lineno, shown))
            return hits
    except HardLinked:
        raise
    except (OSError, ToolError):
        return None


def _search_long_line(f, first: bytes, rx, stop: threading.Event) -> str | None:
    """Search one line longer than LINE_WINDOW, whose first LINE_WINDOW bytes are `first` and whose
    rest is still in `f`; reads the line to its end. Each window is the next piece of the line plus
    the last WINDOW_OVERLAP bytes of the window before, so a match up to WINDOW_OVERLAP - 2 bytes
    long is found wherever it falls. RE2 reads the bytes around `pos`/`endpos` as context, so `^`
    never matches inside the line and `$` only at its real end. The row shows the text around the
    first match (a line is one row, as for a short line)."""
    window, pos = first, 0
    found: str | None = None
    while True:
        piece = b"" if stop.is_set() else f.readline(LINE_WINDOW)
        ends = not piece or piece.endswith(b"\n") or len(piece) < LINE_WINDOW    # this piece ends the line
        if found is None:
            if ends:
                window = (window + piece).rstrip(b"\r\n")
                end = len(window)
            else:
                end = len(window) - 1      # the next window sees the last byte again, with what follows it
            m = rx.search(window, pos, end)
            if m is not None:
                lo = max(0, m.start() - LINE_CHARS // 3)
                text = window[lo:lo + LINE_CHARS].decode("utf-8", errors="replace")
                found = f"…{text} … [a very long line: the text around the match]"
        if ends:
            return found
        if found is None:
            window, pos = window[-WINDOW_OVERLAP:] + piece, 1
