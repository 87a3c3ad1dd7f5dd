"""One whole Claude Code log to the facts of its lines (`scan_facts`), and those facts back to the
records a `LogReader` gives (`FactsReader`): how a cold report reads a log, in a worker process
(agent_core/logs/prefetch.py) or in its own (`whole_log`).

The same lines, counts and facts as `LogReader` reading the log once, with
less work per line: the log is read in big chunks, each line is looked at where it lies in the
chunk (its first and last byte, a search for `"usage"` from its end), and only the lines that can
hold a record are copied out and decoded. Most of a log's bytes are tool results and prompts
that are never copied. The test compares the two on generated logs, chunk edges included.
"""
from __future__ import annotations

from pathlib import Path

from agent_core.logs.claude_code import USAGE, ClaudeCodeParser, extract
from agent_core.logs.files import MAX_LINE_BYTES, open_regular
from agent_core.logs.reader import _DECODER, LogReader, _coalesced, session_from_path, sniff_format
from agent_core.logs.records import CorruptRecord, Deduper, LineStats, Record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

CHUNK = 8 << 20
_USAGE, _COMPACT = b'"usage"', b"ompact"     # claude_code.is_candidate's two marks


class _Scan:
    __slots__ = ("stats", "fmt", "items", "loads", "fallback")

    def __init__(self, loads: Callable[[bytes], object] | None, fallback: str) -> None:
        self.stats = LineStats()
        self.fmt: str | None = None
        self.items: list[tuple[int, tuple]] = []
        self.loads = loads
        self.fallback = fallback

    def line(self, lineno: int, line: bytes) -> bool:
        """A line as `LogReader.objects` takes it (the slow path: before the format is known, or a
        line with trailing blanks); False once the log turns out not to be Claude Code's."""
        stats = self.stats
        if line[-1:] != b"}":
            line = line.rstrip(b" \t\r")
            if not line:
                return True
        if not (line[:1] == b"{" and line[-1:] == b"}"):
            stats.mark_corrupt(lineno)
            return True
        if self.fmt is not None and not (line.rfind(_USAGE) >= 0 or _COMPACT in line):
            return True
        obj = self._decode(line)
        if obj is None:
            stats.mark_corrupt(lineno)
            return True
        if self.fmt is None:
            self.fmt = sniff_format(obj)
            if self.fmt != "claude_code":
                return False
            if not (line.rfind(_USAGE) >= 0 or _COMPACT in line):
                return True
        self.facts(lineno, obj)
        return True

    def _decode(self, line: bytes) -> dict | None:
        obj = None
        if self.loads is not None and self.fmt is not None:
            try:
                obj = self.loads(line)
            except ValueError:
                obj = None
        if obj is None:
            try:
                obj = _DECODER.decode(line.decode())
            except (ValueError, RecursionError):
                return None
        return obj if isinstance(obj, dict) else None

    def facts(self, lineno: int, obj: dict) -> None:
        try:
            f = extract(obj, self.fallback)
        except CorruptRecord:
            self.stats.mark_corrupt(lineno)
            return
        if f is not None:
            self.items.append((lineno, f))


def scan_facts(path: Path, loads: Callable[[bytes], object] | None = None, chunk: int = CHUNK,
               max_line: int = MAX_LINE_BYTES, final: bool = True, start: int = 0, stop: int | None = None,
               fmt: str | None = None) -> tuple:
    """("claude_code" | None, [(line number, facts)], lines, corrupt, first corrupt line, offset,
    resets) as `prefetch.log_facts` sends it; ("other",) for a log in another format. Raises OSError.
    `final=False` (a log still being written): a last line with no newline after it is left for a
    later read, as `LogReader.records()` leaves it, and the offset (where the last line read ends)
    is before it. A part of the log (`prefetch.split_scan`): the bytes from `start` (a line's
    first) to `stop` (just after a newline), line numbers counted from the part's first line;
    `fmt`: the format the part before it showed."""
    scan = _Scan(loads, session_from_path(path))
    scan.fmt = fmt
    stats = scan.stats
    lineno = 0
    offset = start
    left = -1 if stop is None else stop - start      # bytes still to read (-1: to the end)
    carry: list[bytes] = []          # the line the last chunk ended inside, in pieces
    carried = 0
    skipping = False                 # that line is already over max_line
    with open_regular(path) as f:
        if start:
            f.seek(start)
        while left:
            data = f.read(chunk if left < 0 else min(chunk, left))
            if not data:
                break
            offset += len(data)
            if left > 0:
                left -= len(data)
            first = data.find(b"\n")
            if first < 0:
                carried += len(data)
                if not skipping:
                    if carried > max_line:
                        carry, skipping = [], True
                    else:
                        carry.append(data)
                continue
            # the line that was carried in, ended by this chunk's first newline
            lineno += 1
            if skipping or carried + first > max_line:
                stats.mark_corrupt(lineno)
            elif carry or first:
                carry.append(data[:first])
                if not scan.line(lineno, b"".join(carry)):
                    return ("other",)
            carry, carried, skipping = [], 0, False
            last = data.rfind(b"\n")
            pos = first + 1
            fmt_known = scan.fmt == "claude_code"
            while pos <= last:
                nl = data.find(b"\n", pos, last + 1)
                lineno += 1
                if nl - pos > max_line:
                    stats.mark_corrupt(lineno)
                elif nl > pos:
                    if fmt_known and data[nl - 1] == 0x7D:           # "}": the common case, nothing copied
                        if data[pos] != 0x7B:                          # "{"
                            stats.mark_corrupt(lineno)
                        elif data.rfind(_USAGE, pos, nl) >= 0 or data.find(_COMPACT, pos, nl) >= 0:
                            obj = scan._decode(data[pos:nl])
                            if obj is None:
                                stats.mark_corrupt(lineno)
                            else:
                                scan.facts(lineno, obj)
                    else:
                        if not scan.line(lineno, data[pos:nl]):
                            return ("other",)
                        fmt_known = scan.fmt == "claude_code"
                pos = nl + 1
            if last + 1 < len(data):
                tail = data[last + 1:]
                carried = len(tail)
                if carried > max_line:
                    skipping = True
                else:
                    carry = [tail]
    if not final:
        offset -= carried
    elif carry or skipping:              # the last line, with no newline after it
        lineno += 1
        if skipping:
            stats.mark_corrupt(lineno)
        elif not scan.line(lineno, b"".join(carry)):
            return ("other",)
    stats.lines = lineno
    return (scan.fmt, scan.items, stats.lines, stats.corrupt, stats.first_corrupt_line, offset, 0)


def whole_log(path: Path, dedup: Deduper, loads: Callable[[bytes], object] | None = None) -> LogReader | FactsReader:
    """The reader of a log read once from its start: its scanned facts when it is Claude Code's, else
    a `LogReader` (ctxtui's format, or a file that cannot be read: the reader says what is wrong)."""
    try:
        facts = scan_facts(path, loads)
    except OSError:
        facts = ("other",)
    if facts[0] not in ("claude_code", None):
        return LogReader(path, dedup=dedup, loads=loads)
    return FactsReader(path, dedup, facts)


class FactsReader:
    """Stands in for a `LogReader` over a log a worker read: the same records, offset and counts."""

    def __init__(self, path: Path, dedup: Deduper, facts: tuple) -> None:
        fmt, self._items, lines, corrupt, first, self.offset, resets = facts
        self.path = path
        self.format = fmt
        self.dedup = dedup
        self._parser = ClaudeCodeParser(str(path), session_from_path(path), dedup) if fmt else None
        self.stats = LineStats(lines, corrupt, first)
        self.resets = resets

    @property
    def parser(self) -> ClaudeCodeParser | None:
        return self._parser

    @property
    def follower(self) -> FactsReader:      # read_log asks `reader.follower.resets`
        return self

    def records(self, final: bool = True) -> Iterator[Record]:
        return _coalesced(self._records())

    def _records(self) -> Iterator[Record]:
        parser = self._parser
        if parser is None:
            return
        apply = parser.apply
        items, self._items = self._items, []
        i, n = 0, len(items)
        while i < n:
            facts = items[i][1]
            j = i + 1
            if facts[0] == USAGE:        # the copies of one response that follow it (one per content block)
                key, side, session = facts[1], facts[2], facts[3]
                while j < n and (f := items[j][1])[0] == USAGE and f[1] == key and f[2] == side and f[3] == session:
                    j += 1
            if j - i == 1:
                yield from apply(facts)
            else:
                yield from self._copies(parser, [f for _, f in items[i:j]])
            i = j

    def _copies(self, parser: ClaudeCodeParser, run: list[tuple]) -> Iterator[Record]:
        """Consecutive copies of one response. When nothing stands for it yet and no compaction waits
        for its session, applying them all leaves the last copy whose usage changed (each copy's
        usage is compared with the one before it): that copy alone is applied. Otherwise each is."""
        key, side, session = run[0][1], run[0][2], run[0][3]
        if self.dedup.standing(key) is not None or (not side and session in parser.pending):
            for facts in run:
                yield from parser.apply(facts)
            return
        last = 0
        for k in range(1, len(run)):
            if run[k][4] != run[k - 1][4]:
                last = k
        yield from parser.apply(run[last])
