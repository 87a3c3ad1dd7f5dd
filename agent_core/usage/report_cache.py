"""`ctxtui usage`'s saved state: a report goes on from where the same report stopped last time, so
running it again later in the day reads only the lines appended to its logs since.

What is saved, per set of report options (paths, project, days, time zone, cost mode, --debug,
blocks): the report's sums, each response's standing copy (the `Deduper`'s), and for every log
read its identity (device, inode), the bytes read, the modification time when that was all of it,
a checksum of its first 4 KB, its last 64 bytes read, its line counts, and what its parser was
waiting for. The state is used only when going on from it gives what a cold run would:

- every log it read is still there, the same file, not shorter, its first 4 KB and the 64 bytes
  before the old end unchanged, and not rewritten in place (the same size with another mtime);
- no line read now holds a copy of a response, or a record of a session, that a log later in the
  run's order already held (which copy of a response counts depends on the order of the copies);
- the first new record of a log is not a later copy of the last response read from it (a cold
  run merges those two, and would not have counted the first copy's time);
- every log is Claude Code's (ctxtui's own logs are always read whole).

Otherwise the run reads everything (cold) and saves a fresh state. The file is marshal data (plain
values: loading it runs no code), 0600 in a 0700 folder of the cache folder, read only when it is
ours and private, stamped with the price data and this code's files; deleting it is always safe.
"""
from __future__ import annotations

import marshal
import os
import stat
import sys
import zlib
from contextlib import suppress
from pathlib import Path

from agent_core.logs import fast_decode
from agent_core.logs.claude_code import ClaudeCodeParser
from agent_core.logs.fact_scan import FactsReader, whole_log
from agent_core.logs.files import open_regular
from agent_core.logs.reader import LogReader
from agent_core.logs.records import CompactionRecord, Deduper, LineStats, UsageRecord
from agent_core.usage.report import UsageReport, project_of
from agent_core.usage.report_state import (compaction_in, compaction_out, report_state, restore_report, usage_in,
                                           usage_out)
from compaction.private_dir import FILE_MODE, UnsafeDir, ensure_private_dir

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

FORMAT = 3          # 2: a session's last main-chain time is saved; 3: standing copies in groups per log
HEAD_BYTES = 4096
MARK_BYTES = 64
MAX_STATES = 16                 # state files kept (one per set of options); the oldest go first
MAX_STATE_BYTES = 1 << 30
DIR_NAME = "usage-reports"
_CODE = Path(__file__).resolve().parent.parent


class Cold(Exception):
    """Going on from the saved state would not give what a cold run gives: read everything."""


class TrackedDeduper(Deduper):
    """A `Deduper` that starts from a saved state and knows, per response, the last log (its
    position in the run) that held a copy: a copy from a log before that one raises `Cold`.

    The saved state is one group per log: the keys whose last copy came from it, and their
    standing copies as one marshal blob. A repeated run decodes a group only when a new copy of
    one of its responses comes, and writes the untouched groups back as they were, so its cost
    follows the bytes appended, not the responses ever read (decoding every standing copy of
    250 MB of logs took 40 ms each way)."""

    __slots__ = ("_groups", "_remap", "_index", "_open", "last_file", "position", "_just")

    def __init__(self, groups: Sequence[tuple[list[str], bytes]] = (), remap: Sequence[int] = ()) -> None:
        super().__init__()
        self._groups = groups               # old position -> (keys, blob of {key: usage_out})
        self._remap = remap                 # old position -> this run's position
        self._index: dict[str, int] | None = None      # key -> old position, built on first need
        self._open: dict[int, dict[str, tuple]] = {}    # old position -> its decoded blob, less the keys taken
        self.last_file: dict[str, int] = {}
        self.position = 0
        self._just: tuple[str, int] | None = None       # (key, position) of the last call: a repeat changes nothing

    def _old_position(self, key: str) -> int | None:
        if self._index is None:
            self._index = {k: i for i, (keys, _) in enumerate(self._groups) for k in keys}
        return self._index.get(key)

    def _group(self, old: int) -> dict[str, tuple]:
        group = self._open.get(old)
        if group is None:
            group = self._open[old] = marshal.loads(self._groups[old][1])
        return group

    def _seen(self, key: str) -> None:
        if self._just is not None and self._just[0] == key and self._just[1] == self.position:
            return
        last = self.last_file.get(key)
        if last is None:
            old = self._old_position(key) if self._groups else None
            if old is None:
                last = -1
            else:
                last = self._remap[old]
                saved = self._group(old).pop(key, None)
                if saved is not None:
                    self._kept[key] = usage_in(saved)
        if last > self.position:
            raise Cold(f"a copy of {key} comes before another already read")
        self.last_file[key] = self.position
        self._just = (key, self.position)

    def wanted(self, key: str, is_sidechain: bool, buckets: dict[str, int] | None = None) -> bool:
        self._seen(key)
        return super().wanted(key, is_sidechain, buckets)

    def standing(self, key: str) -> UsageRecord | None:
        self._seen(key)
        return super().standing(key)

    def admit(self, rec: UsageRecord) -> UsageRecord | None:
        self._seen(rec.request_key)
        return super().admit(rec)

    def state(self, files: int) -> list[tuple[list[str], bytes]]:
        """The groups to save for a run over `files` logs."""
        out: list[tuple[list[str], bytes] | None] = [None] * files
        for old, group in enumerate(self._groups):
            if old in self._open:           # some of its keys were taken: what is left of it
                keys = [k for k in group[0] if k not in self.last_file]
                group = (keys, marshal.dumps(self._open[old]))
            out[self._remap[old]] = group
        new: dict[int, tuple[list[str], dict[str, tuple]]] = {}
        for key, pos in self.last_file.items():
            keys, kept = new.get(pos) or new.setdefault(pos, ([], {}))
            keys.append(key)
            rec = self._kept.get(key)
            if rec is not None:
                kept[key] = usage_out(rec)
        for pos, (keys, kept) in new.items():
            prior = out[pos]
            if prior is not None:           # an old group with new keys: one group again
                keys = prior[0] + keys
                kept = {**marshal.loads(prior[1]), **kept}
            out[pos] = (keys, marshal.dumps(kept))
        empty: tuple[list[str], bytes] = ([], marshal.dumps({}))
        return [g if g is not None else empty for g in out]


# ---- one log ------------------------------------------------------------------------------------

class LogState:
    """What was read of one log, and how to tell that it is still the same file."""

    __slots__ = ("path", "dev", "ino", "offset", "mtime_ns", "head", "mark", "lines", "corrupt", "first_corrupt",
                 "last_key", "pending", "format")

    def __init__(self, path: str, dev: int, ino: int, offset: int, mtime_ns: int | None, head: int, mark: bytes,
                 lines: int, corrupt: int, first_corrupt: int | None, last_key: str | None, pending: list,
                 format: str | None) -> None:
        self.path, self.dev, self.ino, self.offset, self.mtime_ns = path, dev, ino, offset, mtime_ns
        self.head, self.mark = head, mark
        self.lines, self.corrupt, self.first_corrupt = lines, corrupt, first_corrupt
        self.last_key, self.pending, self.format = last_key, pending, format

    def out(self) -> tuple:
        return tuple(getattr(self, n) for n in self.__slots__)

    @property
    def continuable(self) -> bool:
        """Its last line read was whole (ended by a newline): new bytes start a new line."""
        return self.offset == 0 or self.mark.endswith(b"\n")


def _fingerprint(path: str, offset: int) -> tuple[int, bytes]:
    """(checksum of the first 4 KB, the 64 bytes before `offset`) of the file now."""
    with open_regular(Path(path)) as f:
        fd = f.fileno()
        head = zlib.crc32(os.pread(fd, min(HEAD_BYTES, offset), 0))
        mark = os.pread(fd, min(MARK_BYTES, offset), offset - min(MARK_BYTES, offset))
    return head, mark


def _unchanged(old: LogState) -> bool:
    """True: the log is as it was read; False: it grew, and what was read is intact; raises Cold
    when it is another file, shorter, or rewritten."""
    try:
        st = os.stat(old.path)
    except OSError:
        raise Cold(f"{old.path} is gone") from None
    if (st.st_dev, st.st_ino) != (old.dev, old.ino) or st.st_size < old.offset:
        raise Cold(f"{old.path} was replaced or shortened")
    if st.st_size == old.offset:
        if st.st_mtime_ns != old.mtime_ns:
            raise Cold(f"{old.path} was rewritten in place")
        return True
    if not old.continuable or _fingerprint(old.path, old.offset) != (old.head, old.mark):
        raise Cold(f"{old.path} was rewritten")
    return False


def read_log(report: UsageReport, dedup: TrackedDeduper, path: Path, position: int, old: LogState | None,
             sessions: SessionTracker, reader: LogReader | FactsReader | None = None,
             restored: frozenset[str] = frozenset()) -> LogState:
    """Read one log into the report: all of it, or from where `old` ended (`reader`: a worker's
    facts of the whole log). Raises OSError when it cannot be read, Cold when the result would
    differ from a cold run's. `restored`: the sessions of the saved state, whose project is the
    first log's of theirs (a cold run's order of logs); another project's log may come first."""
    dedup.position = position
    if reader is None:
        offset = old.offset if old else 0
        try:
            big = fast_decode.worth_it(os.stat(path).st_size - offset)
        except OSError:
            big = False
        loads = fast_decode.decoder() if big else None
        reader = whole_log(path, dedup, loads) if old is None else \
            LogReader(path, dedup=dedup, fmt=old.format, offset=offset, loads=loads)
    first = True
    if old is not None:
        reader.follower.stats = LineStats(old.lines, old.corrupt, old.first_corrupt)
        if isinstance(reader.parser, ClaudeCodeParser) and old.pending:   # the one format that holds some
            reader.parser.pending = {sid: _waiting(report, sid, c) for sid, c in old.pending}
    last = None
    project = project_of(str(path)) if restored else None
    for rec in reader.records(final=True):
        if project is not None and rec.session_id in restored and report.sessions[rec.session_id].project != project:
            raise Cold(f"session {rec.session_id} has records in another project's log")
        if first and old is not None and type(rec) is UsageRecord and rec.replaces is not None \
                and rec.request_key == old.last_key:
            raise Cold(f"{path} ended inside a response")
        first = False
        if not rec.is_sidechain:     # a sub-agent's records add up in any order (report.py: last_main, _when)
            sessions.see(rec.session_id, position)
        report.add(rec)
        last = rec
    if reader.follower.resets:          # shortened or replaced while it was being read
        raise Cold(f"{path} changed while it was read")
    if old is not None and last is None:
        last_key = old.last_key
    else:
        last_key = last.request_key if type(last) is UsageRecord else None
    offset = reader.offset
    try:
        st = os.stat(path)
        dev, ino, mtime = st.st_dev, st.st_ino, (st.st_mtime_ns if st.st_size == offset else None)
        head, mark = _fingerprint(str(path), offset)
    except OSError:             # gone just after it was read: counted, and the next run reads it cold
        dev, ino, mtime, head, mark = -1, -1, None, 0, b""
    pending = reader.parser.pending if isinstance(reader.parser, ClaudeCodeParser) else {}
    s = reader.stats
    return LogState(str(path), dev, ino, offset, mtime, head, mark, s.lines, s.corrupt, s.first_corrupt_line,
                    last_key, [(sid, compaction_out(c)) for sid, c in pending.items()], reader.format)


def _waiting(report: UsageReport, session: str, saved: tuple) -> CompactionRecord:
    """A compaction the parser waits on: the report's own record of it when it has one (the parser
    fills it in, as in a cold run), else the saved one."""
    rec = compaction_in(saved)
    s = report.sessions.get(session)
    return s.compactions.get(rec.key, rec) if s is not None else rec


class SessionTracker:
    """The last log (by position) that gave a record of each session; a record of a session from a
    log before that one raises Cold (a session's last context figure and its compactions are the
    latest ones read)."""

    def __init__(self, old: dict[str, int] | None = None, remap: Sequence[int] = ()) -> None:
        self._old = old or {}
        self._remap = remap
        self.last: dict[str, int] = {}

    def see(self, session: str, position: int) -> None:
        last = self.last.get(session)
        if last is None:
            old = self._old.get(session)
            last = -1 if old is None else self._remap[old]
        if last > position:
            raise Cold(f"session {session} has records in a later log")
        self.last[session] = position

    def state(self) -> dict[str, int]:
        out = {k: self._remap[v] for k, v in self._old.items()}
        out.update(self.last)
        return out


# ---- the saved state ---------------------------------------------------------------------------------

def stamp(prices: str | None) -> str | None:
    """What a saved state holds only for: this format, Python's marshal, the price data, this code."""
    if prices is None:
        return None
    parts = [str(FORMAT), sys.version, prices]
    for rel in ("usage/report.py", "usage/report_cache.py", "usage/report_state.py", "logs/records.py",
                "logs/reader.py", "logs/claude_code.py", "pricing/tally.py", "pricing/pricer.py"):
        try:
            st = (_CODE / rel).stat()
            parts.append(f"{st.st_size}:{st.st_mtime_ns}")
        except OSError:
            parts.append("-")
    return "|".join(parts)


def state_path(folder: Path, key: str) -> Path:
    data = key.encode("utf-8", "surrogatepass")
    return folder / DIR_NAME / f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}.state"


def load(path: Path, key: str, code_stamp: str | None) -> dict | None:
    """The saved state for these options and this code, or None (missing, someone else's, not
    private, damaged or stale: all mean a cold run)."""
    if code_stamp is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if (not stat.S_ISREG(st.st_mode) or st.st_mode & 0o077 or st.st_size > MAX_STATE_BYTES
                or (hasattr(os, "geteuid") and st.st_uid != os.geteuid())):
            return None
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = marshal.loads(f.read())
    except (OSError, ValueError, EOFError, TypeError):
        return None
    finally:
        os.close(fd)
    if (not isinstance(data, dict) or data.get("key") != key or data.get("stamp") != code_stamp
            or not isinstance(data.get("files"), list)):
        return None
    return data


def save(path: Path, key: str, code_stamp: str | None, data: dict) -> None:
    """Write the state atomically, 0600; a failure (a full disk, a folder not ours) is silent: the
    state only saves time. Keeps the newest MAX_STATES states."""
    if code_stamp is None:
        return
    blob = marshal.dumps({**data, "key": key, "stamp": code_stamp})
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{zlib.crc32(os.urandom(8)):08x}")
    try:
        ensure_private_dir(path.parent)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), FILE_MODE)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(blob)
            os.replace(tmp, path)
        except BaseException:
            with suppress(OSError):
                os.unlink(tmp)
            raise
        _prune(path.parent)
    except (OSError, UnsafeDir):
        pass


def _prune(folder: Path) -> None:
    states = []
    for entry in os.scandir(folder):
        if entry.name.endswith(".state") and entry.is_file(follow_symlinks=False):
            states.append((entry.stat(follow_symlinks=False).st_mtime_ns, entry.path))
    for _, p in sorted(states)[:-MAX_STATES]:
        with suppress(OSError):
            os.unlink(p)


# ---- a run --------------------------------------------------------------------------------------------

def build(files: Sequence[Path], new_report: Callable[[], UsageReport], folder: Path, key: str,
          code_stamp: str | None,
          warn_unreadable: Callable[[Path, OSError], None]) -> tuple[UsageReport, list[LogState]]:
    """The report over `files` (in the run's order), going on from the saved state when it can, and
    the state of each log read (for the corrupt-line warning). Saves the new state."""
    path = state_path(folder, key)
    saved = load(path, key, code_stamp)
    resumed = None
    if saved is not None:
        try:
            resumed = _resume(saved, files, new_report)
        except Cold:
            pass
        except (KeyError, IndexError, TypeError, ValueError, AttributeError, EOFError):     # a damaged state
            pass
    report, logs, dedup, sessions, changed = resumed or _cold(files, new_report, warn_unreadable)
    if changed and all(s.format in ("claude_code", None) for s in logs):
        try:
            groups = dedup.state(len(files))
        except (TypeError, ValueError, EOFError):       # a damaged group of the old state: the next run is cold
            groups = None
            with suppress(OSError):
                os.unlink(path)
        if groups is not None:
            save(path, key, code_stamp, {"files": [s.out() for s in logs], "report": report_state(report),
                                         "dedup": groups, "sessions": sessions.state()})
    elif resumed is not None:
        with suppress(OSError):
            os.utime(path)      # still in use: the last to be pruned
    return report, logs


def _cold(files: Sequence[Path], new_report: Callable[[], UsageReport],
          warn_unreadable: Callable[[Path, OSError], None]):
    report = new_report()
    dedup, sessions = TrackedDeduper(), SessionTracker()
    logs: list[LogState] = []
    whole = True
    # Loaded by a cold run only (threads, signals, queues: 3 ms a repeated report does not need)
    from agent_core.logs import prefetch  # noqa: PLC0415  (start-up time)

    ahead = None
    try:
        ahead = prefetch.start(files)
        for position, f in enumerate(files):
            try:
                reader = ahead.reader(position, dedup) if ahead is not None else None
                state = read_log(report, dedup, f, position, None, sessions, reader)
            except OSError as e:
                report.unreadable += 1
                warn_unreadable(f, e)
                whole = False        # a log that could not be read: nothing saved, the next run is cold too
                continue
            report.files += 1
            report.skipped_lines += state.corrupt
            logs.append(state)
    finally:
        if ahead is not None:
            ahead.close()
    return report, logs, dedup, sessions, whole


def _resume(saved: dict, files: Sequence[Path], new_report: Callable[[], UsageReport]):
    old_logs = [LogState(*t) for t in saved["files"]]
    if len(saved["dedup"]) != len(old_logs):
        raise ValueError("a damaged state")
    where = {str(f): i for i, f in enumerate(files)}
    remap = []
    for s in old_logs:
        if s.path not in where:
            raise Cold(f"{s.path} is no longer read")
        remap.append(where[s.path])
    if remap != sorted(remap):
        raise Cold("the logs come in another order")
    by_path = {s.path: s for s in old_logs}
    changed = len(old_logs) != len(files)
    report = new_report()
    restore_report(report, saved["report"])
    restored = frozenset(report.sessions)
    dedup = TrackedDeduper(saved["dedup"], remap)
    sessions = SessionTracker(saved["sessions"], remap)
    logs: list[LogState] = []
    for position, f in enumerate(files):
        old = by_path.get(str(f))
        if old is not None and _unchanged(old):
            logs.append(old)
            continue
        before = old.corrupt if old is not None else 0
        try:
            state = read_log(report, dedup, f, position, old, sessions, restored=restored)
        except OSError:
            raise Cold(f"{f} cannot be read") from None
        if state.format not in ("claude_code", None):
            raise Cold(f"{f} is not a Claude Code log")
        if old is None:
            report.files += 1
        report.skipped_lines += state.corrupt - before
        logs.append(state)
        changed = True
    return report, logs, dedup, sessions, changed    # nothing new: the saved state stays as it is


def options_key(paths: Sequence[Path], **options: object) -> str:
    """The options a saved state holds for (the logs' folders as real paths)."""
    roots = sorted(os.path.realpath(os.path.expanduser(str(p))) for p in paths)
    return repr((FORMAT, roots, sorted((k, repr(v)) for k, v in options.items())))


