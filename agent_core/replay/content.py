"""Content kept: which file contents a context holds, and which recorded answers used one.

"References kept" (references.py) counts a path anywhere in the context's text, so a list of
files in session notes counts each of them as kept. This module counts content instead.

- A *read* is a read tool's result (`READ_TOOLS`: `Read`, `read_file`, `NotebookRead`; not an
  error) for a path: the message carrying it holds that file's content.
- A *use* is a path in a recorded answer's references (its tool inputs: a file it edits, greps,
  reads again, names in a command) whose content the trajectory had read by then (a read result
  among the messages added up to that request, as recorded).
- A context *holds* a file's content when it has a message with it: a read result for the path as
  recorded (a result the engine cleared or replaced is a new message, made by
  `EnginePolicy.message_of`, with none of this: it does not count), or a file re-attached after
  a compaction (an `attachment` whose text has `<file path="PATH">`, compaction/reinject.py).

Paths are compared `os.path.normpath`-ed. A message's paths are found once per message key (shared
by every policy of the trajectory); the uses once per trajectory; a policy run keeps a count of
the paths its context holds (running.py), so a request costs O(what changed).

Each use whose content is gone is charged a re-read (simulate.py): the round trip of reading the
file again — the context sent read from the cache, the file's latest read result written, the call
— unless the answer itself reads that file (the log holds that read, and replay already prices it).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from compaction.cache_economics import READ_TOOLS

from agent_core.logs.trajectory import Message, Trajectory
from agent_core.logs.trajectory_refs import call_files

_ATTACHED = re.compile(r"<file path=\"([^\"]*)\">")


def norm(path: str) -> str:
    return os.path.normpath(path) if path else path


@dataclass(frozen=True, slots=True)
class Use:
    """An answer's use of a file it had read: the path, the tokens of its latest read result (what
    reading it again writes) and whether losing it is charged (False: the answer reads it itself)."""
    path: str
    tokens: int
    charged: bool = True


def _result_text(block: dict[str, Any]) -> str:
    c = block.get("content", "")
    if isinstance(c, str):
        return c
    if isinstance(c, list):
        return "\n".join(str(b.get("text", "")) for b in c if isinstance(b, dict))
    return ""


class ContentIndex:
    """The trajectory's reads and uses (module docstring). `uses[i]`: the uses of request i's
    answer (by position in `trajectory.requests`)."""

    def __init__(self, trajectory: Trajectory) -> None:
        self._reads: dict[str, tuple[str, ...]] = {}      # message key -> paths whose content it holds
        self._attached: dict[str, tuple[str, ...]] = {}   # attachment key -> paths it re-attaches
        self.uses: list[tuple[Use, ...]] = []
        calls: dict[str, tuple[str, tuple[str, ...]]] = {}   # tool_use id -> (tool, paths)
        latest: dict[str, int] = {}                          # path -> tokens of its latest read result
        for req in trajectory.requests:
            for m in req.added:
                self._scan(m, calls, latest)
            resp = req.response
            own = self._calls(resp, calls)         # the answer's own reads (and its calls, for the next results)
            seen: set[str] = set()
            uses = []
            for ref in resp.references:
                p = norm(ref)
                if p and p in latest and p not in seen:
                    seen.add(p)
                    uses.append(Use(p, latest[p], p not in own))
            self.uses.append(tuple(uses))

    @staticmethod
    def _calls(m: Message, calls: dict[str, tuple[str, tuple[str, ...]]]) -> set[str]:
        """Record `m`'s tool calls; the paths it reads."""
        reads: set[str] = set()
        if m.blocks:
            for b in m.blocks:
                if b.get("type") == "tool_use" and isinstance(b.get("id"), str):
                    name = str(b.get("name", ""))
                    paths = tuple(norm(p) for p in call_files(b.get("input")))
                    calls[b["id"]] = (name, paths)
                    if name in READ_TOOLS:
                        reads.update(paths)
        elif m.role == "assistant" and READ_TOOLS.intersection(m.tools) and set(m.tools) <= READ_TOOLS:
            reads.update(norm(p) for p in m.files)
        return reads

    def _scan(self, m: Message, calls: dict[str, tuple[str, tuple[str, ...]]], latest: dict[str, int]) -> None:
        """Record the calls `m` makes and the file contents it carries (a read result)."""
        if m.role == "assistant":
            self._calls(m, calls)
            return
        if m.kind != "tool_result":
            return
        found: list[tuple[str, int]] = []           # (path, text length) per read result
        results = [b for b in (m.blocks or ()) if b.get("type") == "tool_result"]
        known = [b for b in results if str(b.get("tool_use_id")) in calls]
        if known:
            lengths = [max(1, len(_result_text(b))) for b in results]
            whole = sum(lengths)
            for b, n in zip(results, lengths):
                name, paths = calls.get(str(b.get("tool_use_id")), ("", ()))
                if name in READ_TOOLS and not b.get("is_error"):
                    found += [(p, n * m.tokens // whole // max(1, len(paths))) for p in paths]
        elif READ_TOOLS.intersection(m.tools):
            # no call to pair with (a hand-made message, a result whose call the log lost): its tools and files say it
            files = [norm(p) for p in m.files]
            found = [(p, m.tokens // max(1, len(files))) for p in files]
        if not found:
            return
        paths = tuple(dict.fromkeys(p for p, _ in found if p))
        if paths:
            self._reads[m.key] = paths
        for p, tokens in found:
            if p:
                latest[p] = max(0, tokens)

    def paths(self, m: Message) -> tuple[str, ...]:
        """The files whose content `m` carries: a recorded read result's paths, or an attachment's."""
        if m.kind == "attachment":
            got = self._attached.get(m.key)
            if got is None:
                got = self._attached[m.key] = tuple(dict.fromkeys(norm(p) for p in _ATTACHED.findall(m.text)))
            return got
        return self._reads.get(m.key, ())

    @staticmethod
    def lost(uses: Iterable[Use], present: Mapping[str, int]) -> list[Use]:
        """The uses whose content is not in `present` (path -> messages holding it)."""
        return [u for u in uses if present.get(u.path, 0) <= 0]
