"""Content kept: which file contents a context holds, which recorded turns referred to one again,
and the re-read each lost one costs.

"References kept" (references.py) counts a path anywhere in the context's text, so a list of
files in session notes counts each of them as kept. This module counts content instead.

- A *read* is a read tool's result (`READ_TOOLS`: `Read`, `read_file`, `NotebookRead`; not an
  error) for a path: the message carrying it holds that file's content.
- A *use* is a request at which the recorded session refers again to a file it had read by then
  (a read result among the messages added up to that request, as recorded): a user prompt added
  for that request names it, or the answer does, in its text or in its tool inputs (a file it
  edits, greps, reads again, names in a command). A name is matched to the paths read
  (`ContentIndex.resolve`): the same path `normpath`-ed, or one that ends the other at a `/`
  (`file_07.txt` in a prompt names `/ws/file_07.txt` read by Claude Code's `Read`); of several,
  the one read last. One use per path per request.
- A context *holds* a file's content when it has a message with it: a read result for the path as
  recorded (a result the engine cleared or replaced is a new message, made by
  `EnginePolicy.message_of`, with none of this: it does not count), a re-read replay made
  (`reread_messages`), or a file re-attached after a compaction (an `attachment` whose text has
  `<file path="PATH">`, compaction/reinject.py).

A use whose content the context sent for that request does not hold is a *re-read*, always: the
agent must read the file again to do what the log shows it doing. When the recorded answer reads
that file itself, the log holds the re-read and replay prices it as recorded (`Use.charged`
False); otherwise simulate.py adds it — the tool call's round trip, and the call and its result
stay in the policy's context from then on (`reread_messages`). So `content_kept + rereads ==
content_total` for every policy.

Paths are compared `os.path.normpath`-ed. A message's paths are found once per message key (shared
by every policy of the trajectory); the uses once per trajectory; a policy run keeps a count of
the paths its context holds (running.py), so a request costs O(what changed).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from compaction.cache_economics import READ_TOOLS, REREAD_CALL_TOKENS

from agent_core.logs.trajectory import Message, Trajectory
from agent_core.logs.trajectory_refs import call_files, text_files

_ATTACHED = re.compile(r"<file path=\"([^\"]*)\">")


def norm(path: str) -> str:
    return os.path.normpath(path) if path else path


@dataclass(frozen=True, slots=True)
class Use:
    """A request's use of a file read earlier: the path, the tokens of its latest read result (what
    reading it again writes), whether losing it is charged (False: the answer reads it itself, and
    the log holds that re-read), and what a re-read brings back: that result's text and the read
    tool that made it."""
    path: str
    tokens: int
    charged: bool = True
    text: str = ""
    tool: str = "Read"


@dataclass(slots=True)
class _Read:
    tokens: int
    text: str
    tool: str
    order: int          # when it was read (the latest of several files a name fits wins)


def answer_text(m: Message) -> str:
    """An answer's own words: its text blocks (its tool inputs are its references)."""
    if m.blocks is None:
        return m.text
    return "\n".join(str(b.get("text", "")) for b in m.blocks if b.get("type") == "text")


def _bare(path: str) -> str:
    """A relative name without its leading `./` and `../` (what a suffix match compares)."""
    while path.startswith(("./", "../")):
        path = path.split("/", 1)[1]
    return path


def _result_text(block: dict[str, Any]) -> str:
    c = block.get("content", "")
    if isinstance(c, str):
        return c
    if isinstance(c, list):
        return "\n".join(str(b.get("text", "")) for b in c if isinstance(b, dict))
    return ""


class ContentIndex:
    """The trajectory's reads and uses (module docstring). `uses[i]`: the uses at request i (by
    position in `trajectory.requests`)."""

    def __init__(self, trajectory: Trajectory) -> None:
        self._reads: dict[str, tuple[str, ...]] = {}      # message key -> paths whose content it holds
        self._attached: dict[str, tuple[str, ...]] = {}   # attachment key -> paths it re-attaches
        self.uses: list[tuple[Use, ...]] = []
        self._latest: dict[str, _Read] = {}               # path -> its latest read result
        self._names: dict[str, list[str]] = {}            # a path's last component -> the paths read with it
        self._order = 0
        calls: dict[str, tuple[str, tuple[str, ...]]] = {}   # tool_use id -> (tool, paths)
        for req in trajectory.requests:
            named: list[str] = []
            for m in req.added:
                self._scan(m, calls)
                if m.kind == "prompt":
                    named += text_files(m.text)
            resp = req.response
            own = {self.resolve(p) or p for p in self._calls(resp, calls)}   # the answer's own reads
            named += (w for ref in resp.references for w in (text_files(ref) if " " in ref else (ref,)))
            named += text_files(answer_text(resp))
            seen: set[str] = set()
            uses = []
            for ref in named:
                p = self.resolve(ref)
                if p is not None and p not in seen:
                    seen.add(p)
                    r = self._latest[p]
                    uses.append(Use(p, r.tokens, p not in own, r.text, r.tool))
            self.uses.append(tuple(uses))

    def resolve(self, name: str) -> str | None:
        """The path read so far that `name` names (module docstring), or None."""
        p = norm(name)
        if not p or p in self._latest:
            return p or None
        paths = self._names.get(p.rsplit("/", 1)[-1])
        if not paths:
            return None
        bare = _bare(p)
        fits = [q for q in paths if q.endswith("/" + bare) or p.endswith("/" + _bare(q))]
        return max(fits, key=lambda q: self._latest[q].order) if fits else None

    def reread_messages(self, use: Use, request: int, at: float) -> list[Message]:
        """What re-reading `use`'s file at `request` adds to a policy's context: the read call
        (`REREAD_CALL_TOKENS`) and its result (the file's latest read result again, as a new
        message this index knows to carry the file). The same for every policy of the trajectory."""
        key = f"reread\x00{request}\x00{use.path}"
        tid = "toolu_reread_" + hashlib.blake2b(key.encode(), digest_size=8).hexdigest()
        arg = {"Read": "file_path", "NotebookRead": "notebook_path"}.get(use.tool, "path")
        call = {"type": "tool_use", "id": tid, "name": use.tool, "input": {arg: use.path}}
        result = {"type": "tool_result", "tool_use_id": tid, "content": use.text}
        self._reads[key + "\x00result"] = (use.path,)
        return [Message("assistant", "assistant", REREAD_CALL_TOKENS, key + "\x00call", json.dumps(call["input"]),
                        tools=(use.tool,), files=(use.path,), timestamp=at, blocks=[call]),
                Message("user", "tool_result", use.tokens, key + "\x00result", use.text, tools=(use.tool,),
                        files=(use.path,), timestamp=at, blocks=[result])]

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

    def _scan(self, m: Message, calls: dict[str, tuple[str, tuple[str, ...]]]) -> None:
        """Record the calls `m` makes and the file contents it carries (a read result)."""
        if m.role == "assistant":
            self._calls(m, calls)
            return
        if m.kind != "tool_result":
            return
        found: list[tuple[str, int, str, str]] = []       # (path, tokens, text, tool) per read result
        results = [b for b in (m.blocks or ()) if b.get("type") == "tool_result"]
        known = [b for b in results if str(b.get("tool_use_id")) in calls]
        if known:
            texts = [_result_text(b) for b in results]
            lengths = [max(1, len(t)) for t in texts]
            whole = sum(lengths)
            for b, n, text in zip(results, lengths, texts):
                name, paths = calls.get(str(b.get("tool_use_id")), ("", ()))
                if name in READ_TOOLS and not b.get("is_error"):
                    found += [(p, n * m.tokens // whole // max(1, len(paths)), text, name) for p in paths]
        elif READ_TOOLS.intersection(m.tools):
            # no call to pair with (a hand-made message, a result whose call the log lost): its tools and files say it
            files = [norm(p) for p in m.files]
            tool = next(t for t in m.tools if t in READ_TOOLS)
            found = [(p, m.tokens // max(1, len(files)), m.text, tool) for p in files]
        if not found:
            return
        paths = tuple(dict.fromkeys(p for p, *_ in found if p))
        if paths:
            self._reads[m.key] = paths
        for p, tokens, text, tool in found:
            if p:
                if p not in self._latest:
                    self._names.setdefault(p.rsplit("/", 1)[-1], []).append(p)
                self._order += 1
                self._latest[p] = _Read(max(0, tokens), text, tool, self._order)

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
