"""Files the user attached to a prompt with `@path`: the shape of their blocks in the user entry.

The loop (agent_core/mentions) adds one text block per file after the prompt and lists them in the
entry's `meta["mentions"]`; the engine reads them back here, so a mentioned file counts as read
(re-injection after a compaction, session memory's files read) and the file's text is never taken
for something the user typed. The block starts with `[`, so it does not read as a typed prompt.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from compaction.entry import Entry

META = "mentions"     # the entry's meta key: [{"path", "block", "partial", "lines", "total_lines"}]
HEAD = "[Contents of "


@dataclass(frozen=True)
class Mentioned:
    path: str          # relative to the workspace, as shown
    content: str       # what was attached (numbered lines, as read_file gives them)
    block: int         # index of its block in the entry's content
    partial: bool      # cut to read_file's bounds
    lines: int = 0     # lines attached
    total_lines: int = 0


def block_text(path: str, content: str, note: str = "") -> str:
    """The text block a mentioned file is attached as."""
    return (f"{HEAD}{path}, attached because the user mentioned it: it need not be read again{note}]\n"
            f"<file path=\"{path}\">\n{content}\n</file>")


def _body(text: str) -> str:
    _, _, rest = text.partition("\n")
    _, _, body = rest.partition("\n")
    return body.removesuffix("\n</file>")


def mentioned(entry: Entry) -> list[Mentioned]:
    """The files attached to `entry` by @-mentions, in order; [] for any other entry."""
    info: Any = entry.meta.get(META)
    if not isinstance(info, list) or entry.role != "user":
        return []
    out = []
    content = entry.content
    for m in info:
        if not isinstance(m, dict):
            continue
        i = m.get("block")
        if not isinstance(i, int) or not 0 <= i < len(content):
            continue
        text = content[i].get("text")
        if content[i].get("type") != "text" or not isinstance(text, str) or not text.startswith(HEAD):
            continue        # rewritten since (a layer replaced the block)
        out.append(Mentioned(str(m.get("path", "")), _body(text), i, bool(m.get("partial")),
                             _count(m.get("lines")), _count(m.get("total_lines"))))
    return out


def _count(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else 0


def mention_blocks(entry: Entry) -> frozenset[int]:
    """Indices of `entry`'s blocks that are attached files, not typed text."""
    return frozenset(m.block for m in mentioned(entry))
