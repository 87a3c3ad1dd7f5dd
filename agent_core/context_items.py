"""The largest items in the context, for `/context`: which tool results, files read, re-attached
files, summaries and messages take the most tokens of what the next request holds — so a user can
see what to drop, or what to name as a focus for `/compact`.

Read from the projected view (what is sent: collapse's digests in place of what they replaced).
The sizes are per-block estimates: the view's total is anchored on the API's usage, its parts are
not, so they are said as estimates.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from compaction.entry import Entry
from compaction.estimate import estimate_block
from compaction.mentioned_files import mentioned

TOP = 12
FILE_READERS = frozenset({"read_file"})   # tools whose result is a file's contents
LABEL_CHARS = 70


@dataclass(frozen=True)
class ContextItem:
    kind: str          # tool result | file read | mentioned file | re-attached file | summary | user | assistant
                       # | thinking
    label: str         # what it is: the tool and its argument, the path, the start of the text
    tokens: int        # estimated


def _arg(tool_input: dict) -> str:
    for k in ("path", "file_path", "command", "pattern"):
        v = tool_input.get(k)
        if v:
            return str(v)
    return ""


def _one_line(s: str) -> str:
    s = " ".join(s.split())
    return s if len(s) <= LABEL_CHARS else s[:LABEL_CHARS - 1] + "…"


def context_items(view: Iterable[Entry]) -> list[ContextItem]:
    """Every block of the view as an item: a tool result is named by the call it answers."""
    calls: dict[str, tuple[str, str]] = {}
    out: list[ContextItem] = []
    for e in view:
        if not e.sent:
            continue
        if e.kind in ("summary", "attachment", "snip_marker"):
            kind = {"summary": "summary", "attachment": "re-attached file", "snip_marker": "snip marker"}[e.kind]
            label = str(e.meta.get("path") or "") or _one_line(e.text())
            out.append(ContextItem(kind, label, sum(estimate_block(b) for b in e.content)))
            continue
        attached = {m.block: m.path for m in mentioned(e)}    # @path files: their own items
        for i, b in enumerate(e.content):
            t = b.get("type")
            if i in attached:
                out.append(ContextItem("mentioned file", _one_line(attached[i]), estimate_block(b)))
            elif t == "tool_use":
                calls[str(b.get("id", ""))] = (str(b.get("name", "?")), _arg(b.get("input") or {}))
                out.append(ContextItem("tool call", _one_line(f"{b.get('name', '?')} {_arg(b.get('input') or {})}"),
                                       estimate_block(b)))
            elif t == "tool_result":
                name, arg = calls.get(str(b.get("tool_use_id", "")), ("?", ""))
                kind = "file read" if name in FILE_READERS else "tool result"
                out.append(ContextItem(kind, _one_line(arg if kind == "file read" else f"{name} {arg}"),
                                       estimate_block(b)))
            elif t == "text":
                out.append(ContextItem(e.role, _one_line(str(b.get("text", ""))), estimate_block(b)))
            elif t == "thinking":
                out.append(ContextItem("thinking", _one_line(str(b.get("thinking", ""))), estimate_block(b)))
            else:
                out.append(ContextItem(str(t), "", estimate_block(b)))
    return out


def largest_items(view: Iterable[Entry], n: int = TOP) -> list[ContextItem]:
    """The `n` largest items, largest first (ties in the order they were sent)."""
    items = context_items(view)
    order = sorted(range(len(items)), key=lambda i: (-items[i].tokens, i))
    return [items[i] for i in order[:n]]


def _tail(path: str) -> str:
    """A long path by its end (the file's name is what tells two memory files apart)."""
    path = " ".join(path.split())
    return path if len(path) <= LABEL_CHARS else "…" + path[-(LABEL_CHARS - 1):]


def head_items(memory_files: Iterable, mcp_tokens: dict[str, int]) -> list[ContextItem]:
    """The parts of the system prompt and tools the user chose: each memory file (its path) and
    each MCP server's tool definitions, so /context shows what they take as it shows messages."""
    out = [ContextItem("memory file", _tail(str(f.path)), int(f.tokens)) for f in memory_files]
    out += [ContextItem("MCP tools", _one_line(name), int(n)) for name, n in mcp_tokens.items()]
    return out


def with_head(items: list[ContextItem], head: list[ContextItem], n: int = TOP) -> list[ContextItem]:
    """`items` (largest first) and `head` merged, the `n` largest."""
    return sorted([*items, *head], key=lambda i: -i.tokens)[:n]
