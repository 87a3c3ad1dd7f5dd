"""One incremental reader over a session log of either format: bytes -> lines -> records.

`LogReader.read()` returns the records appended since the previous call (what `ctxtui watch`
polls); `LogReader.records(final=True)` streams a finished file once (what `ctxtui usage` does).
The format is sniffed from the first complete line: ctxtui's records carry a `"t"` field,
Claude Code's a `"type"`.
"""
from __future__ import annotations

import json
from pathlib import Path

from agent_core.logs.claude_code import ClaudeCodeParser
from agent_core.logs.layout import is_subagent_log, subagent_session_dir
from agent_core.logs.records import CorruptRecord, Deduper, LineStats, LogFollower, Record, UsageRecord

TYPE_CHECKING = False    # typing stays unloaded at run time: 3 ms of every status line call
if TYPE_CHECKING:
    from typing import Callable, Iterator, Protocol

    class Parser(Protocol):
        source: str

        def wants(self, line: bytes) -> bool: ...

        def parse(self, obj: dict) -> list[Record]: ...

_DECODER = json.JSONDecoder()


def looks_whole(line: bytes) -> bool:
    """A JSON-object line ends with `}`: truncated and garbage lines fail this without parsing."""
    return line[:1] == b"{" and line[-1:] == b"}"


def sniff_format(obj: dict) -> str:
    return "ctxtui" if "t" in obj and "type" not in obj else "claude_code"


def session_from_path(path: Path) -> str:
    """The session id a file stands for when its records do not say: `<session>.jsonl`, or the
    session folder of a sub-agent log (`<session>/subagents/agent-x.jsonl`)."""
    if is_subagent_log(path):
        return subagent_session_dir(path).name
    return path.stem


class LogReader:
    """Follows one log file; share a `Deduper` between the readers of one report."""

    def __init__(self, path: str | Path, *, dedup: Deduper | None = None, fmt: str | None = None,
                 offset: int = 0, loads: Callable[[bytes], object] | None = None) -> None:
        """`loads`: a faster decoder for the lines the parser wants (see `objects`)."""
        self.path = Path(path)
        self.loads = loads
        self.dedup = dedup if dedup is not None else Deduper()
        self.follower = LogFollower(self.path, offset=offset)
        self.format = fmt
        self._parser: Parser | None = self._make_parser(fmt) if fmt else None

    @property
    def stats(self) -> LineStats:
        return self.follower.stats

    @property
    def skipped(self) -> int:
        """Corrupt or truncated lines skipped so far."""
        return self.follower.stats.corrupt

    @property
    def offset(self) -> int:
        return self.follower.offset

    @property
    def parser(self) -> Parser | None:
        """The format's parser, once the format is known."""
        return self._parser

    def _make_parser(self, fmt: str) -> Parser:
        fallback = session_from_path(self.path)
        if fmt == "ctxtui":
            # Loaded on the first ctxtui log only: it brings the session layer and the compaction
            # package, which a report over Claude Code's logs never needs (start-up time).
            from agent_core.logs.ctxtui_log import CtxtuiParser  # noqa: PLC0415  (start-up time)
            return CtxtuiParser(str(self.path), fallback, self.dedup)
        if fmt == "claude_code":
            return ClaudeCodeParser(str(self.path), fallback, self.dedup)
        raise ValueError(f"unknown log format {fmt!r}; expected 'claude_code' or 'ctxtui'")

    def read(self, final: bool = False) -> list[Record]:
        """The records in the bytes appended since the last read."""
        return list(self.records(final=final))

    def records(self, final: bool = False) -> Iterator[Record]:
        """The records of the bytes appended since the last read. With `final=True` (a finished
        file, read once) the copies of one response that follow each other come out as one record,
        its final one, instead of a record and its upgrades: the same totals with less work."""
        if final:
            return _coalesced(self._records(True))
        return self._records(False)

    def _records(self, final: bool) -> Iterator[Record]:
        stats = self.follower.stats
        for lineno, obj in self.objects(final, self.loads):
            parser = self._parser
            assert parser is not None      # objects() finds the format before its first line
            yield from _parse(parser, obj, stats, lineno)

    def objects(self, final: bool = False,
                loads: Callable[[bytes], object] | None = None) -> Iterator[tuple[int, dict]]:
        """(line number, decoded object) of each new line the format's parser wants (the format is
        found on the first whole line); corrupt lines are counted, not yielded. `loads`: a faster
        decoder of a line's bytes that gives what `json` gives or raises ValueError (then `json`
        decides)."""
        stats = self.follower.stats
        decode = _DECODER.decode
        parser = self._parser
        for lineno, line in self.follower.lines(final=final):
            if line[-1:] != b"}":              # the common case costs no copy
                line = line.rstrip(b" \t\r")
                if not line:
                    continue
            if not looks_whole(line):
                stats.mark_corrupt(lineno)
                continue
            if parser is not None and not parser.wants(line):
                continue
            obj = None
            if loads is not None and parser is not None:
                try:
                    obj = loads(line)
                except ValueError:
                    obj = None
            if obj is None:
                try:
                    obj = decode(line.decode())
                except (ValueError, RecursionError):  # RecursionError: absurdly deep nesting
                    stats.mark_corrupt(lineno)
                    continue
            if not isinstance(obj, dict):
                stats.mark_corrupt(lineno)
                continue
            if parser is None:
                self.format = sniff_format(obj)
                parser = self._parser = self._make_parser(self.format)
                if not parser.wants(line):
                    continue
            yield lineno, obj


def _coalesced(records: Iterator[Record]) -> Iterator[Record]:
    """Holds each usage record back until the next record shows whether it upgrades it (the next
    content block of the same response, with its final usage): then only the upgrade is yielded,
    replacing what the held one replaced. Claude Code writes those copies one after another."""
    held: UsageRecord | None = None
    for rec in records:
        if held is not None:
            if type(rec) is UsageRecord and rec.replaces is not None and rec.replaces.request_key == held.request_key:
                rec.replaces = held.replaces
            else:
                yield held
            held = None
        if type(rec) is UsageRecord:
            held = rec
        else:
            yield rec
    if held is not None:
        yield held


def _parse(parser: Parser, obj: dict, stats: LineStats, lineno: int) -> list[Record]:
    """The parser's records for one line; a line it finds corrupt is counted, not raised."""
    try:
        return parser.parse(obj)
    except CorruptRecord:
        stats.mark_corrupt(lineno)
        return []
