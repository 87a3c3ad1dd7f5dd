"""Session logs that ctxtui reads: Claude Code's and its own, as one stream of normalized records.

    reader = LogReader(path)          # sniffs the format; share a Deduper across files of a report
    for rec in reader.records(final=True): ...     # one pass over a finished file
    new = reader.read()                            # later: only what was appended since

The names below load on first use (PEP 562): the status line imports one module of this package
on every refresh and must not pay for the others.
"""
from __future__ import annotations

import importlib

# `discover` is both a submodule and a function: bound eagerly, or importing the submodule anywhere
# would leave the package attribute pointing at the module.
from agent_core.logs.discover import (claude_config_dirs, claude_projects_dir, claude_projects_dirs, discover, expand,
                                      newest_log)

TYPE_CHECKING = False    # typing stays unloaded at run time: 3 ms of every status line call
if TYPE_CHECKING:
    from typing import Any

_WHERE = {
    "MAX_LINE_BYTES": "files", "NotRegularFile": "files", "is_regular": "files", "open_regular": "files",
    "LogReader": "reader", "session_from_path": "reader",
    "CompactionRecord": "records", "Deduper": "records", "LineStats": "records", "LogFollower": "records",
    "Record": "records", "UsageRecord": "records", "context_tokens": "records",
}

__all__ = [*sorted(_WHERE), "claude_config_dirs", "claude_projects_dir", "claude_projects_dirs", "discover", "expand",
           "newest_log"]


def __getattr__(name: str) -> Any:
    try:
        module = _WHERE[name]
    except KeyError:
        raise AttributeError(f"module 'agent_core.logs' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_WHERE])
