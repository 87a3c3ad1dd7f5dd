"""What a compaction lost, told in the terms the user cares about: their own prompts (kept verbatim,
quoted in part, or dropped), the files the agent read whose content is gone (with sizes), the tool
results cleared, and the identifiers, paths and numbers from the user's prompts that are no longer
anywhere in the context, as a recall score (the share still there).

It compares the working history before and after the compaction: what the model can still read is
every text, tool input and tool result left after it (a summary that names `parse_header` keeps
it). Pure and O(size of both histories); called once per compaction.
"""
from __future__ import annotations

import json
import re
from typing import Any, Iterable, Sequence

from compaction.cache_economics import reread_text
from compaction.entry import Entry

LIST_CAP = 20                   # items listed per kind (the rest are counted)
QUOTE_MIN = 24                  # a line or sentence of a prompt this long found in the context: it is quoted
PREVIEW = 80
READ_TOOLS = frozenset({"read_file", "Read"})
# What a user names and expects the agent to keep exactly: paths and file names, identifiers with an
# underscore, a digit or an inner capital (snake_case, camelCase, ISSUE-42, v2), numbers of 2+ digits.
_PATH = r"(?:[\w.-]+/)+[\w.-]+|[\w-]+\.[A-Za-z][\w]{0,5}\b"
_IDENT = r"\b[A-Za-z_][A-Za-z0-9]*(?:[_-][A-Za-z0-9]+)+\b|\b[a-z]+[A-Z][A-Za-z0-9]*\b|\b[A-Za-z]+[0-9][A-Za-z0-9]*\b"
_NUMBER = r"(?<![\w.])\d{2,}(?:\.\d+)?(?![\w])"
_NAMED = re.compile(f"{_PATH}|{_IDENT}|{_NUMBER}")


def _texts(e: Entry) -> Iterable[str]:
    """Everything of an entry the model reads: text, thinking, tool inputs and tool results."""
    for b in e.content:
        t = b.get("type")
        if t == "text":
            yield str(b.get("text", ""))
        elif t == "thinking":
            yield str(b.get("thinking", ""))
        elif t == "tool_use":
            yield json.dumps(b.get("input", {}), ensure_ascii=False)
        elif t == "tool_result":
            yield _result_text(b)


def _result_text(block: dict[str, Any]) -> str:
    c = block.get("content")
    if isinstance(c, str):
        return c
    if isinstance(c, list):
        return "\n".join(str(x.get("text", "")) for x in c if isinstance(x, dict))
    return ""


def _is_prompt(e: Entry) -> bool:
    return (e.role == "user" and e.kind == "message" and not e.meta.get("isCompactSummary")
            and any(b.get("type") == "text" for b in e.content)
            and not any(b.get("type") == "tool_result" for b in e.content))


_PIECES = re.compile(r"\n|(?<=[.!?;])\s+")


def _prompt_fate(text: str, context: str) -> str:
    if text in context:
        return "verbatim"
    pieces = [p.strip() for p in _PIECES.split(text)]
    return "quoted" if any(len(p) >= QUOTE_MIN and p in context for p in pieces) else "dropped"


def named_items(prompts: Sequence[str]) -> list[str]:
    """The paths, identifiers and numbers the prompts name, each once, in order."""
    seen: dict[str, None] = {}
    for p in prompts:
        for m in _NAMED.finditer(p):
            seen.setdefault(m.group(0).rstrip(".,:;"), None)
    return [s for s in seen if s]


def _reads(entries: Sequence[Entry]) -> dict[str, tuple[str, int]]:
    """tool_use id -> (path, chars of its result) for every file read in `entries`."""
    calls = {str(b.get("id")): str((b.get("input") or {}).get("path") or (b.get("input") or {}).get("file_path") or "?")
             for e in entries for b in e.content if b.get("type") == "tool_use" and b.get("name") in READ_TOOLS}
    out: dict[str, tuple[str, int]] = {}
    for e in entries:
        for b in e.content:
            if b.get("type") == "tool_result" and str(b.get("tool_use_id")) in calls:
                tid = str(b.get("tool_use_id"))
                out[tid] = (calls[tid], len(_result_text(b)))
    return out


def _results(entries: Sequence[Entry]) -> dict[str, str]:
    return {str(b.get("tool_use_id")): _result_text(b) for e in entries for b in e.content
            if b.get("type") == "tool_result"}


def loss_report(before: Sequence[Entry], after: Sequence[Entry]) -> dict[str, Any]:
    """The loss report of a compaction from `before` to `after` (plain JSON; see the module docstring)."""
    context = "\n".join(t for e in after for t in _texts(e))
    prompts = [e.text() for e in before if _is_prompt(e)]
    fates = {"verbatim": 0, "quoted": 0, "dropped": 0}
    dropped: list[str] = []
    for p in prompts:
        fate = _prompt_fate(p, context)
        fates[fate] += 1
        if fate == "dropped" and len(dropped) < LIST_CAP:
            dropped.append(" ".join(p.split())[:PREVIEW])
    # a file is gone when its content is in no result of the context and no re-attached copy holds it
    old_reads, new_results = _reads(before), _results(after)
    attached = {str(e.meta.get("path")) for e in after
                if e.kind == "attachment" and e.meta.get("path") and not e.meta.get("left_out")}
    still = {path for tid, (path, _) in old_reads.items() if tid in new_results and new_results[tid].strip()
             and len(new_results[tid]) * 2 >= old_reads[tid][1]}
    gone: dict[str, int] = {}
    for _tid, (path, chars) in old_reads.items():
        if path not in still and path not in attached:
            gone[path] = max(gone.get(path, 0), chars)
    old_results = _results(before)
    cleared = [(tid, len(text)) for tid, text in old_results.items()
               if tid not in old_reads and new_results.get(tid) != text and len(text) > 0]
    named = named_items(prompts)
    missing = [n for n in named if n not in context]
    return {
        "prompts": dict(fates, total=len(prompts), dropped_list=dropped),
        "files_gone": [[p, n] for p, n in list(gone.items())[:LIST_CAP]],
        "files_gone_count": len(gone),
        "files_gone_chars": sum(gone.values()),
        "results_cleared": len(cleared),
        "results_cleared_chars": sum(n for _, n in cleared),
        "named": len(named),
        "missing": missing[:LIST_CAP],
        "missing_count": len(missing),
        "recall": None if not named else round((len(named) - len(missing)) / len(named), 3),
    }


def summary_line(loss: dict[str, Any], cache: dict[str, Any] | None = None) -> str:
    """One line for a compaction's marker: "prompts 3 kept, 1 quoted, 2 dropped · 4 files gone
    (41 KB) · 6 results cleared · recall 87% (2 names lost)". With the compaction's
    `details["cache"]`, the re-reads the engine expected it to cause go beside the files gone
    ("4 files gone (41 KB) — re-reads expected $0.031 (18k tokens of results)"; its own part
    when no file is gone): the engine's figure, not one made here."""
    p = loss.get("prompts") or {}
    parts = [f"prompts {p.get('verbatim', 0)} kept, {p.get('quoted', 0)} quoted, {p.get('dropped', 0)} dropped"]
    rereads = reread_text(cache)
    if loss.get("files_gone_count"):
        parts.append(f"{loss['files_gone_count']} file{'s' if loss['files_gone_count'] != 1 else ''} gone "
                     f"({_size(loss.get('files_gone_chars', 0))})" + (f" — {rereads}" if rereads else ""))
    elif rereads:
        parts.append(rereads)
    if loss.get("results_cleared"):
        parts.append(f"{loss['results_cleared']} result{'s' if loss['results_cleared'] != 1 else ''} cleared")
    if loss.get("recall") is not None:
        lost = loss.get("missing_count", 0)
        parts.append(f"recall {round(100 * loss['recall'])}%" + (f" ({lost} name{'s' if lost != 1 else ''} lost)"
                                                                 if lost else ""))
    return " · ".join(parts)


def _size(chars: int) -> str:
    return f"{chars / 1000:.0f} KB" if chars >= 10_000 else f"{chars / 1000:.1f} KB" if chars >= 1000 else f"{chars} B"
