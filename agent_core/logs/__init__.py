"""Session logs that ctxtui reads: Claude Code's and its own, as one stream of normalized records.

    reader = LogReader(path)          # sniffs the format; share a Deduper across files of a report
    for rec in reader.records(final=True): ...     # one pass over a finished file
    new = reader.read()                            # later: only what was appended since
"""
from agent_core.logs.discover import claude_projects_dir, discover, expand, newest_log
from agent_core.logs.files import MAX_LINE_BYTES, NotRegularFile, is_regular, open_regular
from agent_core.logs.reader import LogReader, session_from_path
from agent_core.logs.records import (CompactionRecord, Deduper, LineStats, LogFollower, Record, UsageRecord,
                                     context_tokens)

__all__ = [
    "CompactionRecord", "Deduper", "LineStats", "LogFollower", "LogReader", "MAX_LINE_BYTES", "NotRegularFile",
    "Record", "UsageRecord", "claude_projects_dir", "context_tokens", "discover", "expand", "is_regular",
    "newest_log", "open_regular", "session_from_path",
]
