"""Transcripts: the whole history at a compaction, on disk before the history is replaced."""
from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Sequence

from compaction import clock
from compaction.entry import Entry
from compaction.scrub import scrub
from compaction.private_dir import DIR_MODE, FILE_MODE, UnsafeDir, check_private_dir, ensure_private_dir

__all__ = ["DIR_MODE", "FILE_MODE", "UnsafeDir", "check_private_dir", "ensure_private_dir"]


def atomic_write_text(path: Path, text: str) -> Path:
    """Write to a temp file in the same folder, fsync, then rename: a reader never sees half a
    file. Every registered secret is scrubbed first: nothing ctxtui writes may hold one."""
    ensure_private_dir(path.parent)
    return replace_file(path, scrub(text), FILE_MODE)


def replace_file(path: Path, text: str, mode: int) -> Path:
    """`text` put in place of `path` whole (a temp file beside it, fsync, rename), with `mode`;
    nothing scrubbed: for a file that is the user's (agent_core/threshold_store.py)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


TRANSCRIPTS_FOLDER = "transcripts"   # in a session's folder; the log readers' side: agent_core/logs/layout.py


def transcripts_dir(session_dir: str | Path) -> Path:
    """Where a session's compaction transcripts are written: `<session folder>/transcripts`."""
    return Path(session_dir) / TRANSCRIPTS_FOLDER


_next_free: dict[tuple[str, str], int] = {}     # (folder, trigger) -> the second after the last name given


def transcript_path(folder: Path, trigger: str, now: float | None = None, reserve: bool = True) -> Path:
    """`<folder>/<timestamp>-<trigger>.jsonl` for a transcript written at `now`: a name already taken
    (two compactions in one second) moves to the next free second, so every name has the same
    length (the path is part of the summary message, and its size must not depend on timing).
    `reserve=False` (a preview): the name is not kept from the next writer."""
    return _free_name(folder, trigger, now, reserve)[0]


def _free_name(folder: Path, trigger: str, now: float | None, reserve: bool) -> tuple[Path, int]:
    t = int(now if now is not None else clock.now())
    # Compactions seconds apart (a demo session) take names seconds ahead; looking again from the
    # first second each time went over every name taken so far: begin after the last one given.
    key = (str(folder), trigger)
    t = max(t, _next_free.get(key, t))
    path = folder / f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime(t))}-{trigger}.jsonl"
    while path.exists():
        t += 1
        path = folder / f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime(t))}-{trigger}.jsonl"
    if reserve:
        _next_free[key] = t + 1
    return path, t


def write_transcript(folder: Path, entries: Sequence[Entry], trigger: str, now: float | None = None) -> Path:
    """The entries at `transcript_path`, one per line, 0600. Raises on failure so the caller never
    replaces history without a transcript."""
    path, t = _free_name(folder, trigger, now, reserve=True)
    text = "".join(json.dumps(e.to_dict(), ensure_ascii=False) + "\n" for e in entries)
    written = atomic_write_text(path, text)
    if clock.skipped():
        # The demo let time pass (/wait): the file's modified time is the clock's too, so the
        # transcript browser's "modified" column agrees with the name and the timeline.
        os.utime(written, (t, t))
    return written


def read_transcript(path: Path) -> list[Entry]:
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line:
                out.append(Entry.from_dict(json.loads(line)))
    return out
