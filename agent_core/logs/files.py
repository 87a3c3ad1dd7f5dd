"""Opening a log to read it: only a regular file, never blocking (agent_core/regular_file.py,
re-exported here for the readers), and a cap on the length of one line."""
from __future__ import annotations

from agent_core.regular_file import NotRegularFile, check_regular, describe, is_regular, open_regular

__all__ = ["MAX_LINE_BYTES", "NotRegularFile", "check_regular", "describe", "is_regular", "open_regular"]

MAX_LINE_BYTES = 64 << 20    # a longer line is skipped as corrupt (no real record comes near this)
