"""The files a replayed session has read, as its log shows them: what replay hands the engine's
re-attachment after a compaction (`compaction.reinject`, `read_file`) in place of the disk.

A live session re-attaches a recently read file as it is on disk (agent_core/loop/factory.py
`_file_reader`): the whole file, whatever line range the last read asked for, so a file read in
pages comes back whole — or, over the room left for it, as a note naming it. Without a reader the
engine re-attaches the last read's text, a single page of such a file: smaller than the file, it
fits where the live one did not, and every request after the compaction carries it. So replay
hands the engine this reader: a file is every line the log's reads of it have returned so far,
in line order (the read tools number their lines: ctxtui's `N<tab>text`, Claude Code's
`N→text`), without the tools' own notes (a truncation notice); a result with no numbered line is
the file as that read returned it. A file the log has not read returns None (the engine skips it,
as it skips a file the disk no longer has).
"""
from __future__ import annotations

import os
import re
from typing import Any, Iterable

from compaction.cache_economics import READ_TOOLS

from agent_core.logs.trajectory import Message
from agent_core.logs.trajectory_refs import call_files

_LINE = re.compile(r"^\s*(\d+)(?:\t|→)(.*)$")


def _result_text(block: dict[str, Any]) -> str:
    c = block.get("content", "")
    if isinstance(c, str):
        return c
    if isinstance(c, list):
        return "\n".join(str(b.get("text", "")) for b in c if isinstance(b, dict) and b.get("type") == "text")
    return ""


class LoggedFiles:
    """`read(path)`: the file as the reads seen so far show it (module docstring); `add(messages)`
    scans the messages a request adds, in order."""

    def __init__(self) -> None:
        self._calls: dict[str, tuple[str, ...]] = {}        # read call id -> its paths
        self._lines: dict[str, dict[int, str]] = {}         # path -> line number -> text
        self._whole: dict[str, str] = {}                    # path -> an unnumbered result

    def add(self, messages: Iterable[Message]) -> None:
        for m in messages:
            for b in m.blocks or ():
                kind = b.get("type")
                if kind == "tool_use" and b.get("name") in READ_TOOLS and isinstance(b.get("id"), str):
                    paths = tuple(os.path.normpath(p) for p in call_files(b.get("input")) if p)
                    if paths:
                        self._calls[b["id"]] = paths
                elif kind == "tool_result" and not b.get("is_error"):
                    paths = self._calls.pop(str(b.get("tool_use_id")), ())
                    if len(paths) == 1:
                        self._result(paths[0], _result_text(b))

    def _result(self, path: str, text: str) -> None:
        numbered: dict[int, str] = {}
        for line in text.split("\n"):
            got = _LINE.match(line)
            if got:
                numbered[int(got.group(1))] = got.group(2)
        if numbered:
            self._lines.setdefault(path, {}).update(numbered)
            self._whole.pop(path, None)
        elif text.strip():
            self._whole[path] = text
            self._lines.pop(path, None)

    def read(self, path: str) -> str | None:
        key = os.path.normpath(path) if path else path
        lines = self._lines.get(key)
        if lines:
            return "\n".join(lines[n] for n in sorted(lines))
        return self._whole.get(key)
