"""Attaching the files a prompt mentions: each `@path` that names a regular text file in the
workspace becomes a block of the user message (read_file's numbered lines and bounds), so the
model has it without a tool call.

Confined as the tools are (`resolve_path` with ctxtui's protected folders: nothing outside the
workspace, no symlink out, never ctxtui's state), regular files only, no binary file, at most
MAX_FILES a prompt; a file named twice (or by two spellings) is attached once. Each refusal is
said as a notice and nothing is attached for it."""
from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass

from compaction.entry import Entry
from compaction.mentioned_files import META, block_text

from agent_core import events as ev
from agent_core.regular_file import NotRegularFile, check_regular, open_regular
from agent_core.security.visible_text import one_line
from agent_core.tools.base import ToolContext, ToolError
from agent_core.tools.files import SNIFF_BYTES, looks_binary
from agent_core.tools.read_file import ReadFileTool
from agent_core.tools.registry import ToolRegistry
from agent_core.tools.sandbox import SandboxError, resolve_path

from agent_core.mentions.mention_text import find_mentions

MAX_FILES = 10     # a prompt's attachments: each is up to read_file's cap (a share of the window)


@dataclass(frozen=True)
class MentionedPrompt:
    """The user entry for a prompt, and what to say about its mentions (attached, or why not)."""
    entry: Entry
    events: tuple[ev.Event, ...]


def _refusal(path: str, e: SandboxError) -> str:
    text = str(e)
    if "ctxtui's own state" in text:
        why = "it is ctxtui's own state"
    elif "through a symlink" in text:
        why = "it leads through a symlink out of the workspace"
    else:
        why = "it is outside the workspace"
    return f"@{one_line(path)} was not attached: {why}."


def _check(real: str, shown: str) -> str | None:
    """Why the file at `real` cannot be attached, or None (blocking: run in a thread)."""
    try:
        check_regular(real)
        with open_regular(real, follow_symlinks=False) as f:
            head = f.read(SNIFF_BYTES)
    except FileNotFoundError:
        return f"@{shown} was not attached: there is no such file in the workspace."
    except NotRegularFile as e:
        if e.kind == "a folder":
            return f"@{shown} was not attached: it is a folder (mention a file in it)."
        return f"@{shown} was not attached: it is {e.kind}, not a regular file."
    except OSError as e:
        return f"@{shown} was not attached: {e.strerror or e}."
    if looks_binary(head):
        return f"@{shown} was not attached: it is a binary file."
    return None


async def mention_entry(prompt: str, ctx: ToolContext) -> MentionedPrompt:
    """The prompt as a user entry, with one block per attached file after the typed text."""
    content: list[dict] = [{"type": "text", "text": prompt}]
    said: list[ev.Event] = []
    mentions: list[dict] = []
    seen: set[str] = set()
    reader = ToolRegistry([ReadFileTool()])
    for path in find_mentions(prompt) if "@" in prompt else ():
        try:
            real = str(resolve_path(ctx.workspace, path, ctx.protected))
        except SandboxError as e:
            said.append(ev.Notice(_refusal(path, e)))
            continue
        except ToolError:
            said.append(ev.Notice(f"@{one_line(path)} was not attached: it is not a usable path."))
            continue
        if real in seen:
            continue
        seen.add(real)
        rel = os.path.relpath(real, ctx.workspace).replace(os.sep, "/")
        shown = one_line(rel)
        if len(mentions) >= MAX_FILES:
            said.append(ev.Notice(f"@{shown} was not attached: at most {MAX_FILES} files are attached "
                                  f"to one prompt."))
            continue
        why = await asyncio.to_thread(_check, real, shown)
        if why is None:
            out = await reader.execute("read_file", {"path": rel}, ctx)
            why = f"@{shown} was not attached: {one_line(out.content)}" if out.is_error else None
        if why is not None:
            said.append(ev.Notice(why))
            continue
        lines, total = int(out.meta.get("lines_shown", 0)), int(out.meta.get("total_lines", 0))
        partial = lines < total
        note = f" (lines 1-{lines} of {total}: read_file the rest)" if partial else ""
        mentions.append({"path": rel, "block": len(content), "partial": partial, "lines": lines,
                         "total_lines": total})
        content.append({"type": "text", "text": block_text(rel, out.content, note)})
        said.append(ev.FileMentioned(f"Attached @{shown} ({_lines(lines, total)}).", path=rel,
                                     lines=lines, total_lines=total))
    meta = {META: mentions} if mentions else {}
    return MentionedPrompt(Entry({"role": "user", "content": content}, meta=meta), tuple(said))


def _lines(lines: int, total: int) -> str:
    if lines < total:
        return f"lines 1-{lines} of {total:,}"
    return f"{total:,} line{'s' if total != 1 else ''}"
