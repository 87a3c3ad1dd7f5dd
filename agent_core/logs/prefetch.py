"""A big set of Claude Code logs read on every core: worker processes turn each log's bytes into the
facts of its lines (`claude_code.extract`, pure), and the reading process applies those facts in the
logs' order (`ClaudeCodeParser.apply`, the state: deduplication, compactions waiting for their
size). What a report adds up is what one process reading the logs one after another adds up: the
same lines, the same facts, applied in the same order.

A worker is a fork of the reading process. Each log goes to the worker with the fewest bytes so far,
and each worker reads its logs in the run's order and sends one message per log down its own pipe
(marshal: plain values only), drained by a thread so no worker waits for the reader. Anything a
worker cannot do (a log it cannot open, one in ctxtui's format, a worker that died) falls back to
reading that log in the reading process, as without workers. Only for reads of at least MIN_BYTES
on a machine with two cores or more: below that a fork costs more than it saves.
"""
from __future__ import annotations

import marshal
import os
import queue
import signal
import struct
import threading
from contextlib import suppress
from pathlib import Path

from agent_core.logs import fast_decode
from agent_core.logs.fact_scan import FactsReader, scan_facts, whole_log
from agent_core.logs.files import open_regular
from agent_core.logs.records import Deduper

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from agent_core.logs.reader import LogReader

MIN_BYTES = 8 << 20
SPLIT_BYTES = 16 << 20    # one log this big is read by two processes (`split_scan`)
SPLIT_SEARCH = 4 << 20    # how far past the middle a line's start is looked for
MAX_WORKERS = 4
_HEADER = struct.Struct("<Q")
_GONE = object()          # a worker's pipe ended early
_SIGNALS = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}


def log_facts(path: Path, loads=None, start: int = 0, fmt: str | None = None, final: bool = True) -> tuple:
    """What a worker sends for one log, or its part from `start` (`fact_scan.scan_facts`); ("other",)
    for a log another way must read (ctxtui's format, an error: the reading process reads it and
    says what is wrong)."""
    try:
        return scan_facts(path, loads, start=start, fmt=fmt, final=final)
    except Exception:       # noqa: BLE001
        return ("other",)


class Prefetch:
    """Workers reading `files` ahead; `reader(i, dedup)` gives the reader for file i, asked in order."""

    def __init__(self, files: Sequence[Path], sizes: Sequence[int], workers: int) -> None:
        self.files = list(files)
        self._owner: list[int] = []
        self._queues: list[queue.Queue] = []
        self._pids: list[int] = []
        load = [0] * workers
        for size in sizes:
            w = load.index(min(load))
            self._owner.append(w)
            load[w] += size
        pipes: list[tuple[int, int]] = []
        try:
            for w in range(workers):
                pipes.append(self._start([f for f, o in zip(self.files, self._owner) if o == w], load[w]))
            for fd, count in pipes:             # threads only once every fork is made
                q: queue.Queue = queue.Queue()
                threading.Thread(target=_drain, args=(fd, q, count), daemon=True).start()
                self._queues.append(q)
        except BaseException:               # Ctrl-C while starting: no worker is left behind
            self.close()
            for fd, _ in pipes[len(self._queues):]:
                with suppress(OSError):
                    os.close(fd)
            raise

    def _start(self, files: list[Path], share: int) -> tuple[int, int]:
        """Forks the worker for `files` (`share`: their bytes); its pipe's read end and how many messages."""
        return _fork([(f, 0, None, True) for f in files], share, self._pids), len(files)

    def reader(self, i: int, dedup: Deduper) -> LogReader | FactsReader:
        """File i's reader: from its worker's facts, or read here when the worker could not."""
        blob = self._queues[self._owner[i]].get()
        facts = _GONE if blob is _GONE else marshal.loads(blob)
        if facts is _GONE or facts[0] not in ("claude_code", None):
            return whole_log(self.files[i], dedup)
        return FactsReader(self.files[i], dedup, facts)

    def close(self) -> None:
        for pid in self._pids:
            _end(pid)
        self._pids = []


def _fork(jobs: list[tuple[Path, int, str | None, bool]], share: int, pids: list[int]) -> int:
    """A worker sending `log_facts(path, loads, start, fmt, final)` of each job down a pipe, in
    order (`share`: the bytes it reads); its pid goes in `pids` (before a signal can come), and the
    pipe's read end is returned."""
    # ctypes (2 ms) only for a run that forks: a repeated report never does
    from agent_core.security.process_guard import end_with_parent  # noqa: PLC0415  (start-up time)

    r, w = os.pipe()
    # Signals wait until each side is set up: a Ctrl-C just after the fork must neither run the
    # reading process's handlers in the worker nor leave a worker the reader does not know of.
    parent = os.getpid()
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
    try:
        pid = os.fork()
    except BaseException:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        os.close(r)
        os.close(w)
        raise
    if pid == 0:                        # the worker
        code = 0
        try:
            for sig in (*_SIGNALS, signal.SIGPIPE):
                signal.signal(sig, signal.SIG_DFL)    # a signal ends a worker at once
            end_with_parent(parent)
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            os.close(r)
            loads = fast_decode.decoder() if fast_decode.worth_it(share) else None
            with os.fdopen(w, "wb", buffering=1 << 16) as out:
                for path, start, fmt, final in jobs:
                    blob = marshal.dumps(log_facts(path, loads, start, fmt, final))
                    out.write(_HEADER.pack(len(blob)))
                    out.write(blob)
        except BaseException:           # noqa: BLE001 - the reader falls back for what is missing
            code = 1
        os._exit(code)
    pids.append(pid)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    os.close(w)
    return r


def _end(pid: int) -> None:
    with suppress(OSError):
        os.kill(pid, signal.SIGTERM)
    with suppress(OSError):
        os.waitpid(pid, 0)


def _drain(fd: int, q: queue.Queue, count: int) -> None:
    """Reads a worker's messages as they come, so it never waits for the reader to want them."""
    with os.fdopen(fd, "rb") as f:
        for _ in range(count):
            head = f.read(_HEADER.size)
            if len(head) < _HEADER.size:
                break
            (n,) = _HEADER.unpack(head)
            blob = f.read(n)
            if len(blob) < n:
                break
            q.put(blob)
            count -= 1
    for _ in range(count):
        q.put(_GONE)


def _cores() -> int:
    if not hasattr(os, "fork"):
        return 1
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def start(files: Sequence[Path]) -> Prefetch | OneLog | None:
    """Workers for `files` when it is worth it (enough bytes, two cores or more, fork), else None."""
    cores = _cores()
    if cores < 2 or not files:
        return None
    if len(files) == 1:
        return OneLog(files[0]) if _size(files[0]) >= SPLIT_BYTES else None
    sizes = [_size(f) for f in files]
    if sum(sizes) < MIN_BYTES:
        return None
    return Prefetch(files, sizes, min(cores, MAX_WORKERS, len(files)))


class OneLog:
    """`Prefetch` for a run over one big log: read in two halves at once (`split_scan`)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def reader(self, i: int, dedup: Deduper) -> LogReader | FactsReader:
        loads = fast_decode.decoder() if fast_decode.worth_it(_size(self.path)) else None
        facts = split_scan(self.path, loads)
        return FactsReader(self.path, dedup, facts) if facts is not None else whole_log(self.path, dedup, loads)

    def close(self) -> None:
        pass


def split_scan(path: Path, loads=None, final: bool = True) -> tuple | None:
    """`fact_scan.scan_facts(path, loads, final=final)` of one big log by two processes: a worker
    scans the part from the first line that starts past the middle while this process scans the
    part before it, and the two are joined as one scan gives them (the same facts, line numbers
    and counts). None when that is not worth it (under SPLIT_BYTES, one core, no fork) or not
    exact (no line starts near the middle; the first part holds no record, so the second part's
    format is not known; a worker that failed): scan as usual then."""
    if _cores() < 2:
        return None
    size = _size(path)
    if size < SPLIT_BYTES:
        return None
    split = _line_start(path, max(1, size // 2))
    if split is None or split >= size:
        return None
    pids: list[int] = []
    try:
        fd = _fork([(path, split, "claude_code", final)], size - split, pids)
        with os.fdopen(fd, "rb") as pipe:
            first = scan_facts(path, loads, stop=split)
            blob = pipe.read()
    except OSError:
        return None
    finally:
        for pid in pids:
            _end(pid)
    whole = len(blob) >= _HEADER.size and _HEADER.unpack_from(blob)[0] == len(blob) - _HEADER.size
    return joined(first, marshal.loads(blob[_HEADER.size:])) if whole else None


def joined(first: tuple, second: tuple) -> tuple | None:
    """One scan's result from the scans of a log's two parts (the second's line numbers counted
    from its own first line), or None when the first part did not show the log to be Claude Code's
    (then the second part was scanned with a format the log may not have)."""
    if first[0] != "claude_code" or second[0] != "claude_code":
        return None
    _, items, lines, corrupt, first_bad, _, resets = first
    _, items2, lines2, corrupt2, first_bad2, offset, resets2 = second
    items = [*items, *((n + lines, f) for n, f in items2)]
    if first_bad is None and first_bad2 is not None:
        first_bad = first_bad2 + lines
    return ("claude_code", items, lines + lines2, corrupt + corrupt2, first_bad, offset, resets + resets2)


def _line_start(path: Path, middle: int) -> int | None:
    """The offset of the first line that starts at or after `middle` (within SPLIT_SEARCH), or None."""
    try:
        with open_regular(path) as f:
            f.seek(middle - 1)
            data = f.read(SPLIT_SEARCH)
    except OSError:
        return None
    nl = data.find(b"\n")
    return middle + nl if nl >= 0 else None


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0
