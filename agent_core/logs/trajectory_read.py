"""`read_trajectories(path)`: every recorded trajectory in a log, a session or a folder of logs.

Files are found by discover.py's rules (a log brings its `<session>/subagents/*.jsonl`; a folder
brings every log below it), streamed line by line through `LogFollower` (a 100 MB log is never
held whole; an over-long, non-JSON or corrupt line is skipped and counted in `skipped_lines`), and
the format is sniffed from the first record like `LogReader` does. A Claude Code log yields one
trajectory per agent (its compaction sub-agent becomes the main trajectory's `compaction_calls`);
a ctxtui session log yields one. A file that cannot be read at all (a FIFO, a symlink to a device,
a symlink loop, no permission) is handed to `on_skip` and the others are still read; only a
regular file is ever opened, so none of them can hang the reader.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable, Iterable, Iterator

from agent_core.logs.discover import discover
from agent_core.logs.reader import looks_whole, session_from_path, sniff_format
from agent_core.logs.records import CorruptRecord, LogFollower
from agent_core.logs.trajectory import Trajectory
from agent_core.logs.trajectory_claude_code import ClaudeCodeChain, attach_compaction_calls, build_trajectory
from agent_core.logs.trajectory_ctxtui import CtxtuiBuilder

Progress = Callable[[int, int], None]     # (bytes read, bytes in all)
OnSkip = Callable[[Path, OSError], None]  # a file that could not be read, and why
_DECODER = json.JSONDecoder()


class _Lines:
    """The JSON objects of one file, with the count of lines that were not one."""

    def __init__(self, path: Path, progress: Progress | None, base: int, total: int) -> None:
        self.follower = LogFollower(path)
        self.progress, self.base, self.total = progress, base, total
        self.bad = 0

    def __iter__(self) -> Iterator[dict]:
        last = -1
        for _, line in self.follower.lines(final=True):
            if self.progress is not None and self.follower.offset != last:
                last = self.follower.offset
                self.progress(self.base + last, self.total)
            line = line.rstrip(b" \t\r")
            if not line:
                continue
            if not looks_whole(line):
                self.bad += 1
                continue
            try:
                obj = _DECODER.decode(line.decode())
            except (ValueError, RecursionError):
                self.bad += 1
                continue
            if not isinstance(obj, dict):
                self.bad += 1
                continue
            yield obj

    @property
    def skipped(self) -> int:
        return self.bad + self.follower.stats.corrupt


def _read_claude_code(first: dict, rest: Iterator[dict], lines: _Lines, path: Path) -> list[Trajectory]:
    chains: dict[str | None, ClaudeCodeChain] = {}

    def feed(obj: dict) -> None:
        agent = obj.get("agentId") if obj.get("isSidechain") else None
        agent = agent if isinstance(agent, str) or agent is None else str(agent)
        chain = chains.get(agent)
        if chain is None:
            chain = chains[agent] = ClaudeCodeChain(agent_id=agent)
        try:
            chain.feed(obj)
        except (CorruptRecord, TypeError, ValueError):
            lines.bad += 1

    feed(first)
    for obj in rest:
        feed(obj)
    fallback = session_from_path(path)
    out = [build_trajectory(c, str(path), fallback) for c in chains.values() if c.events]
    for t in out[:1]:
        t.skipped_lines = lines.skipped
    return out


def read_file(path: Path, progress: Progress | None = None, base: int = 0, total: int = 0) -> list[Trajectory]:
    """The trajectories of one file (either format)."""
    lines = _Lines(Path(path), progress, base, total or _size(path))
    it = iter(lines)
    first = next(it, None)
    if first is None:
        return []
    if sniff_format(first) == "ctxtui":
        builder = CtxtuiBuilder(str(path), session_from_path(Path(path)))
        builder.feed(first)
        for obj in it:
            builder.feed(obj)
        traj = builder.finish()
        traj.skipped_lines = lines.skipped + builder.bad
        return [traj]
    return _read_claude_code(first, it, lines, Path(path))


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def read_trajectories(paths: str | Path | Iterable[str | Path], progress: Progress | None = None,
                      on_skip: OnSkip | None = None) -> list[Trajectory]:
    """Every trajectory in these logs or folders, main trajectories before their sub-agents.
    Raises FileNotFoundError for a path that does not exist. A file that cannot be read (OSError:
    not a regular file, a symlink loop, permission) is passed to `on_skip` and left out; without
    `on_skip` the error is raised."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    files = discover([Path(p) for p in paths])
    total = sum(_size(f) for f in files)
    done = 0
    found: list[Trajectory] = []
    for f in files:
        try:
            found += read_file(f, progress, done, total)
        except OSError as e:
            if on_skip is None:
                raise
            on_skip(f, e)
        done += _size(f)
    if progress is not None:
        progress(total, total)
    return _attach(found)


def _attach(found: list[Trajectory]) -> list[Trajectory]:
    """Hand each compaction sub-agent's calls to its session's main trajectory (when read too)."""
    mains = {t.session_id: t for t in found if t.agent_id is None and t.source == "claude_code"}
    out = []
    for t in found:
        main = mains.get(t.session_id)
        if t.agent_id is not None and t.agent_id.startswith("acompact") and main is not None:
            attach_compaction_calls(main, [t])
            main.skipped_lines += t.skipped_lines
            continue
        out.append(t)
    return out
