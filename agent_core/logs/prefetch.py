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
from agent_core.logs.records import Deduper

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from agent_core.logs.reader import LogReader

MIN_BYTES = 8 << 20
MAX_WORKERS = 4
_HEADER = struct.Struct("<Q")
_GONE = object()          # a worker's pipe ended early
_SIGNALS = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}


def log_facts(path: Path, loads=None) -> tuple:
    """What a worker sends for one log (`fact_scan.scan_facts`); ("other",) for a log another way must
    read (ctxtui's format, an error: the reading process reads it and says what is wrong)."""
    try:
        return scan_facts(path, loads)
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
                    for f in files:
                        blob = marshal.dumps(log_facts(f, loads))
                        out.write(_HEADER.pack(len(blob)))
                        out.write(blob)
            except BaseException:           # noqa: BLE001 - the reader falls back for what is missing
                code = 1
            os._exit(code)
        self._pids.append(pid)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        os.close(w)
        return r, len(files)

    def reader(self, i: int, dedup: Deduper) -> LogReader | FactsReader:
        """File i's reader: from its worker's facts, or read here when the worker could not."""
        blob = self._queues[self._owner[i]].get()
        facts = _GONE if blob is _GONE else marshal.loads(blob)
        if facts is _GONE or facts[0] not in ("claude_code", None):
            return whole_log(self.files[i], dedup)
        return FactsReader(self.files[i], dedup, facts)

    def close(self) -> None:
        for pid in self._pids:
            with suppress(OSError):
                os.kill(pid, signal.SIGTERM)
            with suppress(OSError):
                os.waitpid(pid, 0)
        self._pids = []


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


def start(files: Sequence[Path]) -> Prefetch | None:
    """Workers for `files` when it is worth it (enough bytes, two cores or more, fork), else None."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if cores < 2 or not hasattr(os, "fork") or len(files) < 2:
        return None
    sizes = [_size(f) for f in files]
    if sum(sizes) < MIN_BYTES:
        return None
    return Prefetch(files, sizes, min(cores, MAX_WORKERS, len(files)))


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0
