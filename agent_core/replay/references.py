"""What stayed visible under a policy: the references each recorded response used (file paths and
identifiers from its tool inputs) that the context sent for it still held somewhere in its text,
and the user's prompts still verbatim in the last request.

Searching every context for every reference would cost O(requests × context); instead each
message's text is searched once for the trajectory's references (cached by `Message.key`, shared
by every policy), and a policy run keeps a count of the references its context holds, updated by
the messages that come and go (simulate.py), so a request costs O(its references).

Searching one text for every reference is itself O(references × text), and a long session holds
thousands of references: past `DIRECT_SEARCH_REFS` the text is split once into runs of word
characters and only the references whose anchor is among them are searched for. A reference's
anchor is a run of its own word characters: one with a non-word character on both sides in the
reference is a whole run of any text holding it (`src/pkg/cache.py` → `cache`, the longest); one
at its start or end is the end or the start of a run there (`def handle_x` → a run starting with
`handle_x`).
A reference that is one bare run (`handle_login`) is searched for directly. Candidates are then
checked with `in`, so the answer is exactly the substring test's.
"""
from __future__ import annotations

import re
from typing import Iterable, Sequence

from agent_core.logs.trajectory import Message, Trajectory

DIRECT_SEARCH_REFS = 24          # up to this many references a text is searched for each directly
_RUN = re.compile(r"[A-Za-z0-9_]+")


def user_prompts(trajectory: Trajectory) -> list[Message]:
    """The user's own prompts, in order (the log's own summaries and tool results excluded)."""
    return [m for r in trajectory.requests for m in r.added if m.kind == "prompt" and m.text.strip()]


class ReferenceIndex:
    def __init__(self, trajectory: Trajectory) -> None:
        self.refs = sorted({r for req in trajectory.requests for r in req.response.references if r})
        self._held: dict[str, frozenset[str]] = {}
        self._direct: list[str] = []                       # searched for in every text
        self._whole: dict[str, list[str]] = {}             # a run of the text -> refs holding it inside
        self._inner: dict[str, frozenset[str]] = {}        # ref -> every run it holds inside
        self._ends: dict[str, list[str]] = {}              # a text's run ends with it -> refs starting with it
        self._starts: dict[str, list[str]] = {}            # a text's run starts with it -> refs ending with it
        self._end_lengths: tuple[int, ...] = ()
        self._start_lengths: tuple[int, ...] = ()
        if len(self.refs) <= DIRECT_SEARCH_REFS:
            self._direct = list(self.refs)
            return
        for ref in self.refs:
            self._index(ref)
        self._end_lengths = tuple(sorted({len(k) for k in self._ends}))
        self._start_lengths = tuple(sorted({len(k) for k in self._starts}))

    def _index(self, ref: str) -> None:
        runs = [(m.start(), m.end()) for m in _RUN.finditer(ref)]
        inner = [ref[s:e] for s, e in runs if s > 0 and e < len(ref)]
        if inner:
            self._whole.setdefault(max(inner, key=len), []).append(ref)
            self._inner[ref] = frozenset(inner)
            return
        lead = [ref[s:e] for s, e in runs if s == 0 and e < len(ref)]       # a text's run ends with it
        trail = [ref[s:e] for s, e in runs if s > 0 and e == len(ref)]      # a text's run starts with it
        if lead and (not trail or len(lead[0]) >= len(trail[0])):       # the longer: fewer texts have it
            self._ends.setdefault(lead[0], []).append(ref)
        elif trail:
            self._starts.setdefault(trail[0], []).append(ref)
        else:                                  # one bare run, or no word character at all
            self._direct.append(ref)

    def candidates(self, text: str) -> Iterable[str]:
        """The references that may appear in `text` (every one that does, and maybe more)."""
        if not (self._whole or self._ends or self._starts):
            return self._direct
        out = set(self._direct)
        whole, ends, starts, inner = self._whole, self._ends, self._starts, self._inner
        runs = set(_RUN.findall(text))
        for run in runs:
            got = whole.get(run)
            if got:
                out.update(r for r in got if inner[r] <= runs)     # every inside run, not just the anchor
            size = len(run)
            for n in self._end_lengths:          # ascending: a text's runs are mostly short
                if n > size:
                    break
                got = ends.get(run[-n:])
                if got:
                    out.update(got)
            for n in self._start_lengths:
                if n > size:
                    break
                got = starts.get(run[:n])
                if got:
                    out.update(got)
        return out

    def held(self, message: Message) -> frozenset[str]:
        """The trajectory's references that appear in this message's text."""
        got = self._held.get(message.key)
        if got is None:
            text = message.text
            got = frozenset(r for r in self.candidates(text) if r in text) if text else frozenset()
            self._held[message.key] = got
        return got

    def found(self, wanted: Iterable[str], context: Sequence[Message]) -> int:
        """How many of `wanted` appear in the text of `context`."""
        left = set(wanted)
        total = len(left)
        for m in reversed(context):
            if not left:
                break
            left -= self.held(m)
        return total - len(left)

    @staticmethod
    def verbatim(prompts: Sequence[Message], context: Sequence[Message]) -> int:
        """How many prompts appear word for word in the context's text. A prompt the context holds
        as it is counts without a search; only the others are looked for in the joined text (built
        only then: under `none` it would be the whole session's)."""
        if not prompts:
            return 0
        keys = {m.key for m in context}
        missing = [p for p in prompts if p.key not in keys]
        kept = len(prompts) - len(missing)
        if missing:
            text = "\n".join(m.text for m in context)
            kept += sum(1 for p in missing if p.text.strip() in text)
        return kept
