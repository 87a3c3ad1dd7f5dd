"""The normalized records every session-log reader yields, and the byte-offset follower under them.

Claude Code's logs and ctxtui's own logs differ in shape; the usage report and `ctxtui watch`
only ever see these records. The follower reads only bytes appended since the last read, so a
live view costs O(new bytes) per update and a 100 MB log is streamed, never loaded whole.

The classes are written out rather than made with `dataclasses`: `ctxtui statusline` reads logs
through them on every refresh of Claude Code's prompt, and importing dataclasses (with inspect and
ast) was 10 ms of its 50; `agent_core.slots` gives them a dataclass's repr and copy.
"""
from __future__ import annotations

import os
from pathlib import Path

from agent_core.pricing.cost import MAX_REQUEST_TOKENS, usage_buckets
from agent_core.logs.files import MAX_LINE_BYTES, open_regular
from agent_core.slots import Slots, ValueSlots

TYPE_CHECKING = False    # typing stays unloaded at run time: 3 ms of every status line call
if TYPE_CHECKING:
    from typing import BinaryIO, Iterator

CHUNK_SIZE = 1 << 20
MARK_BYTES = 64       # the bytes before the read offset kept to notice a log rewritten in place
MAX_TOKENS = MAX_REQUEST_TOKENS  # per bucket of one response: ten times any context window; more is corrupt


class UsageRecord(Slots):
    """One model response's token usage, counted once however many times the log repeats it.

    `request_key` identifies the response (Claude Code: message.id + requestId); `buckets` are the
    five priced buckets of `agent_core.pricing.cost.BUCKETS`; `context_tokens` is the context figure a
    context pane shows for it: as Claude Code shows it for Claude Code logs (what the request held:
    input + cache writes + cache reads), as ctxtui's loop counts it for ctxtui logs (output included).
    `replaces` is set when this record supersedes one yielded earlier for the same response (a
    later copy with the final usage, or a main-chain copy of a response first seen on a sidechain,
    see `Deduper`): an aggregator must subtract the replaced record before adding this one.
    Compared by identity.
    """
    __slots__ = ("session_id", "model", "timestamp", "request_key", "buckets", "is_sidechain", "context_tokens",
                 "source", "path", "agent_id", "purpose", "replaces", "logged_usd")

    session_id: str
    model: str
    timestamp: float | None
    request_key: str
    buckets: dict[str, int]
    is_sidechain: bool
    context_tokens: int
    source: str                           # claude_code | ctxtui
    path: str
    agent_id: str | None                  # the sub-agent that made the call, when known
    purpose: str                          # main | subagent | compaction | memory
    replaces: UsageRecord | None
    logged_usd: float | None              # the log's own price of it (Claude Code's `costUSD`), when given

    def __init__(self, session_id: str, model: str, timestamp: float | None, request_key: str,
                 buckets: dict[str, int], is_sidechain: bool = False, context_tokens: int = 0,
                 source: str = "claude_code", path: str = "", agent_id: str | None = None, purpose: str = "main",
                 replaces: UsageRecord | None = None, logged_usd: float | None = None) -> None:
        self.session_id = session_id
        self.model = model
        self.timestamp = timestamp
        self.request_key = request_key
        self.buckets = buckets
        self.is_sidechain = is_sidechain
        self.context_tokens = context_tokens
        self.source = source
        self.path = path
        self.agent_id = agent_id
        self.purpose = purpose
        self.replaces = replaces
        self.logged_usd = logged_usd


class CompactionRecord(Slots):
    """One compaction. `tokens_after` may be unknown when the record is first seen (Claude Code
    only learns it from the next response): the reader then yields the same `key` again, with
    `tokens_after` filled, so consumers keep the latest record per key. Compared by identity."""
    __slots__ = ("key", "session_id", "timestamp", "trigger", "tokens_before", "tokens_after", "layer",
                 "is_sidechain", "has_summary", "source", "path")

    key: str
    session_id: str
    timestamp: float | None
    trigger: str                          # auto | manual | ... (as logged)
    tokens_before: int | None
    tokens_after: int | None
    layer: str
    is_sidechain: bool
    has_summary: bool
    source: str
    path: str

    def __init__(self, key: str, session_id: str, timestamp: float | None, trigger: str, tokens_before: int | None,
                 tokens_after: int | None = None, layer: str = "compact", is_sidechain: bool = False,
                 has_summary: bool = False, source: str = "claude_code", path: str = "") -> None:
        self.key = key
        self.session_id = session_id
        self.timestamp = timestamp
        self.trigger = trigger
        self.tokens_before = tokens_before
        self.tokens_after = tokens_after
        self.layer = layer
        self.is_sidechain = is_sidechain
        self.has_summary = has_summary
        self.source = source
        self.path = path


Record = UsageRecord | CompactionRecord


class Deduper:
    """Counts each response once across every file of a run, with its final usage.

    Claude Code writes one record per content block of a response, each repeating
    `message.usage`; only the last copy carries the final output count. The rule (`final_copy`):
    a response's usage is its last copy's, and it belongs to the main chain if any copy does.
    A first copy is yielded as is; a later copy that changes the usage, or a main-chain copy of a
    response first seen on a sidechain, is yielded again with `replaces=` the record it supersedes,
    so a streaming consumer subtracts the old one and adds the new one. Share one instance between
    the readers of one report so sub-agent files and resumed-session copies are deduplicated too.
    """

    __slots__ = ("_kept",)

    def __init__(self) -> None:
        self._kept: dict[str, UsageRecord] = {}

    def wanted(self, key: str, is_sidechain: bool, buckets: dict[str, int] | None = None) -> bool:
        """Would a copy with this key (and these buckets, when given) change anything? Checked
        before building the record: an identical repeat of a counted response is dropped cheaply."""
        old = self._kept.get(key)
        if old is None or (old.is_sidechain and not is_sidechain):
            return True
        return buckets is None or buckets != old.buckets

    def standing(self, key: str) -> UsageRecord | None:
        """The record that stands for this response so far (None: not seen yet)."""
        return self._kept.get(key)

    def admit(self, rec: UsageRecord) -> UsageRecord | None:
        """The record to yield (with `replaces` set when it supersedes one yielded earlier), or
        None when this copy changes nothing."""
        key = rec.request_key
        old = self._kept.get(key)
        if old is None:
            self._kept[key] = rec
            return rec
        new = final_copy(old, rec)
        if new is None:
            return None
        # Point at a copy without its own `replaces`, so chains of upgrades stay one link deep.
        new.replaces = old if old.replaces is None else _unlinked(old)
        self._kept[key] = new
        return new

    def __len__(self) -> int:
        return len(self._kept)


def final_copy(old: UsageRecord, new: UsageRecord) -> UsageRecord | None:
    """The one rule for repeated copies of a response: the record that should now stand for it,
    or None when `new` changes nothing. The usage is the later copy's (Claude Code's last copy
    holds the final output count); the attribution is the main chain's once any copy is on it."""
    if old.is_sidechain and not new.is_sidechain:
        return new
    if new.buckets == old.buckets:
        return None
    if new.is_sidechain and not old.is_sidechain:     # a sidechain replay: keep the main-chain attribution
        size = request_tokens if old.source == "claude_code" else context_tokens
        return old.copy(buckets=new.buckets, context_tokens=size(new.buckets), replaces=None)
    return new


def _unlinked(rec: UsageRecord) -> UsageRecord:
    return rec.copy(replaces=None)


def context_tokens(buckets: dict[str, int]) -> int:
    """The context after a response as ctxtui's loop counts it: every bucket, the output included
    (the next request holds it)."""
    return sum(buckets.values())


def request_tokens(buckets: dict[str, int]) -> int:
    """The context of a request as Claude Code shows it: input + cache writes + cache reads,
    the answer's output apart."""
    return sum(buckets.values()) - buckets.get("output", 0)


class CorruptRecord(ValueError):
    """A line that parses but cannot be a real record (an absurd token count): skipped as corrupt."""


def buckets_of(usage: dict) -> dict[str, int]:
    """`agent_core.pricing.cost.usage_buckets`, with a fast path for the usual case (plain non-negative
    ints) because a big log has one call per response; anything unusual goes to cost.py. A count
    above MAX_TOKENS raises CorruptRecord: summed and priced it would make every total absurd
    (or infinite)."""
    i, o = usage.get("input_tokens", 0), usage.get("output_tokens", 0)
    w, r = usage.get("cache_creation_input_tokens", 0), usage.get("cache_read_input_tokens", 0)
    split = usage.get("cache_creation")
    if type(i) is int and type(o) is int and type(w) is int and type(r) is int and 0 <= i <= MAX_TOKENS \
            and 0 <= o <= MAX_TOKENS and 0 <= w <= MAX_TOKENS and 0 <= r <= MAX_TOKENS:
        if not split:
            return {"input": i, "output": o, "cache_write_5m": w, "cache_write_1h": 0, "cache_read": r}
        if type(split) is dict:
            w5, w1 = split.get("ephemeral_5m_input_tokens", 0), split.get("ephemeral_1h_input_tokens", 0)
            if type(w5) is int and type(w1) is int and 0 <= w5 <= MAX_TOKENS and 0 <= w1 <= MAX_TOKENS:
                return {"input": i, "output": o, "cache_write_5m": w5 + max(w - w1 - w5, 0),
                        "cache_write_1h": w1, "cache_read": r}
    buckets = usage_buckets(usage)
    if max(buckets.values()) > MAX_TOKENS:
        raise CorruptRecord(f"a token count above {MAX_TOKENS:,}")
    return buckets


class LineStats(ValueSlots):
    """What the follower saw: lines read and the corrupt ones skipped (with the first's number)."""
    __slots__ = ("lines", "corrupt", "first_corrupt_line")

    lines: int
    corrupt: int
    first_corrupt_line: int | None

    def __init__(self, lines: int = 0, corrupt: int = 0, first_corrupt_line: int | None = None) -> None:
        self.lines = lines
        self.corrupt = corrupt
        self.first_corrupt_line = first_corrupt_line

    def reset(self) -> None:
        self.lines = 0
        self.corrupt = 0
        self.first_corrupt_line = None

    def mark_corrupt(self, lineno: int) -> None:
        self.corrupt += 1
        if self.first_corrupt_line is None:
            self.first_corrupt_line = lineno


class LogFollower:
    """Reads the complete lines appended to a file since the last read.

    A half-written last line is kept and completed by the next read; `final=True` (a one-shot
    read of a finished file) hands it out as a line instead. A line longer than `max_line` is
    dropped as it streams (never held whole) and counted corrupt. If the file was replaced (another
    inode), shrank, or was rewritten (the bytes already read changed, or it was written without
    growing: a rewrite in place that kept its size), reading restarts from the beginning and
    `resets` is incremented. Only a regular file is opened (`open_regular`).
    """

    def __init__(self, path: Path | str, offset: int = 0, chunk_size: int = CHUNK_SIZE,
                 max_line: int = MAX_LINE_BYTES) -> None:
        self.path = Path(path)
        self.offset = offset
        self.chunk_size = chunk_size
        self.max_line = max_line
        self.stats = LineStats()
        self.resets = 0
        self._pieces: list[bytes] = []      # the incomplete trailing line, in pieces
        self._partial = 0                   # bytes of the incomplete trailing line read so far (kept or dropped)
        self._skipping = False              # the trailing line is over max_line: dropped up to its newline
        self._ident: tuple[int, int] | None = None    # (device, inode) of the file read last
        self._mark = b""                    # the last bytes read, ending at `_mark_end`: a rewrite changes them
        self._mark_end = 0
        # The file's modification time when everything in it had been read (None: it grew meanwhile).
        # Written again without growing, it was rewritten in place: the marks alone miss a same-size
        # rewrite that changed bytes before them. (A `touch` reads as one too: a re-read, same figures.)
        self._read_whole_at: int | None = None

    @property
    def pending(self) -> bytes:
        """The incomplete trailing line held for the next read."""
        return b"".join(self._pieces)

    @property
    def line_offset(self) -> int:
        """Where the next complete line starts: resume a follower there after a restart."""
        return self.offset - self._partial

    def _restart(self) -> None:
        self.offset, self._pieces, self._partial, self._skipping = 0, [], 0, False
        self._mark, self._mark_end = b"", 0
        self._read_whole_at = None
        self.resets += 1
        self.stats.reset()

    def _rewritten(self, f: BinaryIO, st: os.stat_result) -> bool:
        """Is this no longer the file whose first `offset` bytes were read?"""
        if self._ident is not None and (st.st_dev, st.st_ino) != self._ident:
            return True
        if st.st_size < self.offset:
            return True
        if (self._read_whole_at is not None and st.st_size == self.offset
                and st.st_mtime_ns != self._read_whole_at):
            return True
        if self._mark:
            f.seek(self._mark_end - len(self._mark))
            return f.read(len(self._mark)) != self._mark
        return False

    def _remember(self, f: BinaryIO, st: os.stat_result) -> None:
        self._ident = (st.st_dev, st.st_ino)
        now = os.fstat(f.fileno())       # after the read: the file may have grown meanwhile
        self._read_whole_at = now.st_mtime_ns if now.st_size == self.offset else None
        if self.offset == self._mark_end:
            return
        start = max(0, self.offset - MARK_BYTES)
        f.seek(start)
        self._mark, self._mark_end = f.read(self.offset - start), self.offset

    def _hold(self, piece: bytes) -> None:
        """Keep a piece of the trailing line, unless that line is already over the cap."""
        self._partial += len(piece)
        if self._skipping:
            return
        if self._partial > self.max_line:
            self._pieces.clear()
            self._skipping = True
            return
        self._pieces.append(piece)

    def lines(self, final: bool = False) -> Iterator[tuple[int, bytes]]:
        """Yield (line number, line without its newline) for each new complete line.

        Streams in chunks, so memory stays O(chunk + max_line), and a line longer than a chunk is
        joined once, not re-copied per chunk. The offset advances a chunk at a time: drain the
        iterator, or lines of the last chunk read are lost. Raises NotRegularFile for a FIFO,
        device or folder; a missing file reads as empty.
        """
        try:
            f = open_regular(self.path)
        except FileNotFoundError:
            return
        with f:
            st = os.fstat(f.fileno())
            if self._rewritten(f, st):
                self._restart()
            f.seek(self.offset)
            try:
                yield from self._read(f, final)
            finally:
                self._remember(f, st)

    def _read(self, f: BinaryIO, final: bool) -> Iterator[tuple[int, bytes]]:
        stats = self.stats
        pieces = self._pieces
        while True:
            chunk = f.read(self.chunk_size)
            if not chunk:
                break
            self.offset += len(chunk)
            if b"\n" not in chunk:
                self._hold(chunk)
                continue
            lines = chunk.split(b"\n")
            tail = lines.pop()
            parts: list[bytes | None] = list(lines)
            if self._skipping:
                parts[0] = None                # the end of a line over the cap
            elif pieces:
                pieces.append(lines[0])
                parts[0] = b"".join(pieces)
            pieces.clear()
            self._partial, self._skipping = 0, False
            if tail:
                self._hold(tail)
            base = stats.lines
            stats.lines += len(parts)
            for i, line in enumerate(parts, base + 1):
                if line is None or len(line) > self.max_line:
                    stats.mark_corrupt(i)
                    continue
                yield i, line
        if final and (pieces or self._skipping):
            line = b"".join(pieces)
            skipped = self._skipping
            pieces.clear()
            self._partial, self._skipping = 0, False
            stats.lines += 1
            if skipped:
                stats.mark_corrupt(stats.lines)
            else:
                yield stats.lines, line
