"""The normalized records every session-log reader yields, and the byte-offset follower under them.

Claude Code's logs and ctxtui's own logs differ in shape; the usage report and `ctxtui watch`
only ever see these records. The follower reads only bytes appended since the last read, so a
live view costs O(new bytes) per update and a 100 MB log is streamed, never loaded whole.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Union

from ..cost import usage_buckets

CHUNK_SIZE = 1 << 20


@dataclass(slots=True, eq=False)
class UsageRecord:
    """One model response's token usage, counted once however many times the log repeats it.

    `request_key` identifies the response (Claude Code: message.id + requestId); `buckets` are the
    five priced buckets of `agent_core.cost.BUCKETS`; `context_tokens` is the context size this
    response saw (input + cache writes + cache reads + output), what a context pane shows.
    `replaces` is set when this main-chain copy supersedes a sidechain copy counted earlier:
    an aggregator must subtract the replaced record before adding this one.
    """
    session_id: str
    model: str
    timestamp: float | None
    request_key: str
    buckets: dict[str, int]
    is_sidechain: bool = False
    context_tokens: int = 0
    source: str = "claude_code"           # claude_code | ctxtui
    path: str = ""
    agent_id: str | None = None           # the sub-agent that made the call, when known
    purpose: str = "main"                 # main | subagent | compaction | memory
    replaces: "UsageRecord | None" = None


@dataclass(slots=True, eq=False)
class CompactionRecord:
    """One compaction. `tokens_after` may be unknown when the record is first seen (Claude Code
    only learns it from the next response): the reader then yields the same `key` again, with
    `tokens_after` filled, so consumers keep the latest record per key."""
    key: str
    session_id: str
    timestamp: float | None
    trigger: str                          # auto | manual | ... (as logged)
    tokens_before: int | None
    tokens_after: int | None = None
    layer: str = "compact"
    is_sidechain: bool = False
    has_summary: bool = False
    source: str = "claude_code"
    path: str = ""


Record = Union[UsageRecord, CompactionRecord]


class Deduper:
    """Counts each response once across every file of a run.

    The first copy of a key wins, except that a main-chain copy replaces a sidechain copy seen
    earlier (the replay is attributed to the main chain). Share one instance between the readers
    of one report so a session's sub-agent files and resumed-session copies are deduplicated too.
    """

    __slots__ = ("_seen", "_sidechain")

    def __init__(self) -> None:
        self._seen: set[str] = set()
        self._sidechain: dict[str, UsageRecord] = {}

    def wanted(self, key: str, is_sidechain: bool) -> bool:
        """Would a record with this key be admitted? (Checked before building the record.)"""
        return key not in self._seen or (not is_sidechain and key in self._sidechain)

    def admit(self, rec: UsageRecord) -> UsageRecord | None:
        """The record to yield (with `replaces` set on an upgrade), or None for a duplicate."""
        key = rec.request_key
        if key not in self._seen:
            self._seen.add(key)
            if rec.is_sidechain:
                self._sidechain[key] = rec
            return rec
        if not rec.is_sidechain and key in self._sidechain:
            rec.replaces = self._sidechain.pop(key)
            return rec
        return None

    def __len__(self) -> int:
        return len(self._seen)


def context_tokens(buckets: dict[str, int]) -> int:
    """The context a response saw, as Claude Code counts it (DESIGN §3): input + cache writes +
    cache reads + output, i.e. every bucket."""
    return sum(buckets.values())


def buckets_of(usage: dict) -> dict[str, int]:
    """`agent_core.cost.usage_buckets`, with a fast path for the usual case (plain non-negative
    ints) because a big log has one call per response; anything unusual goes to cost.py."""
    i, o = usage.get("input_tokens", 0), usage.get("output_tokens", 0)
    w, r = usage.get("cache_creation_input_tokens", 0), usage.get("cache_read_input_tokens", 0)
    split = usage.get("cache_creation")
    if type(i) is int and type(o) is int and type(w) is int and type(r) is int and i >= 0 and o >= 0 \
            and w >= 0 and r >= 0:
        if not split:
            return {"input": i, "output": o, "cache_write_5m": w, "cache_write_1h": 0, "cache_read": r}
        if type(split) is dict:
            w5, w1 = split.get("ephemeral_5m_input_tokens", 0), split.get("ephemeral_1h_input_tokens", 0)
            if type(w5) is int and type(w1) is int and w5 >= 0 and w1 >= 0:
                return {"input": i, "output": o, "cache_write_5m": w5 + max(w - w1 - w5, 0),
                        "cache_write_1h": w1, "cache_read": r}
    return usage_buckets(usage)


@dataclass(slots=True)
class LineStats:
    """What the follower saw: lines read and the corrupt ones skipped (with the first's number)."""
    lines: int = 0
    corrupt: int = 0
    first_corrupt_line: int | None = None

    def reset(self) -> None:
        self.lines, self.corrupt, self.first_corrupt_line = 0, 0, None

    def mark_corrupt(self, lineno: int) -> None:
        self.corrupt += 1
        if self.first_corrupt_line is None:
            self.first_corrupt_line = lineno


@dataclass
class LogFollower:
    """Reads the complete lines appended to a file since the last read.

    A half-written last line is kept and completed by the next read; `final=True` (a one-shot
    read of a finished file) hands it out as a line instead. If the file shrinks (replaced or
    truncated) reading restarts from the beginning and `resets` is incremented.
    """
    path: Path
    offset: int = 0
    chunk_size: int = CHUNK_SIZE
    stats: LineStats = field(default_factory=LineStats)
    resets: int = 0
    _pieces: list[bytes] = field(default_factory=list)   # the incomplete trailing line, in pieces

    def __post_init__(self) -> None:
        self.path = Path(self.path)

    @property
    def pending(self) -> bytes:
        """The incomplete trailing line held for the next read."""
        return b"".join(self._pieces)

    @property
    def line_offset(self) -> int:
        """Where the next complete line starts: resume a follower there after a restart."""
        return self.offset - sum(len(p) for p in self._pieces)

    def lines(self, final: bool = False) -> Iterator[tuple[int, bytes]]:
        """Yield (line number, line without its newline) for each new complete line.

        Streams in chunks, so memory stays O(chunk + longest line), and a line longer than a chunk
        is joined once, not re-copied per chunk. The offset advances a chunk at a time: drain the
        iterator, or lines of the last chunk read are lost.
        """
        try:
            f = open(self.path, "rb")
        except FileNotFoundError:
            return
        with f:
            size = os.fstat(f.fileno()).st_size
            if size < self.offset:
                self.offset, self._pieces, self.resets = 0, [], self.resets + 1
                self.stats.reset()
            f.seek(self.offset)
            stats = self.stats
            pieces = self._pieces
            while True:
                chunk = f.read(self.chunk_size)
                if not chunk:
                    break
                self.offset += len(chunk)
                if b"\n" not in chunk:
                    pieces.append(chunk)
                    continue
                parts = chunk.split(b"\n")
                if pieces:
                    pieces.append(parts[0])
                    parts[0] = b"".join(pieces)
                    pieces.clear()
                tail = parts.pop()
                if tail:
                    pieces.append(tail)
                base = stats.lines
                stats.lines += len(parts)
                for i, line in enumerate(parts, base + 1):
                    yield i, line
            if final and pieces:
                line = b"".join(pieces)
                pieces.clear()
                stats.lines += 1
                yield stats.lines, line
