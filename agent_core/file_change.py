"""One changed file as the side pane and /cost list it: data only, so the panes (and `ctxtui
watch`, which shows the same cost pane) read it without loading the tools that count it
(agent_core/tools/changed_files.py)."""
from __future__ import annotations

from dataclasses import dataclass

BINARY = "binary"
NOT_READ = "not read"        # no longer a regular file (its note says what it is now)
LARGE = "large"
UNCOUNTED = frozenset({BINARY, "too large", "no copy", NOT_READ, LARGE})   # listed, without lines added and removed


@dataclass(frozen=True)
class FileChange:
    shown: str
    added: int
    removed: int
    state: str          # "created", "modified", "deleted", "binary", "too large", "no copy", "not read",
                        # "large", "unchanged"
    note: str = ""      # what the label says instead of the counts ("now a folder, not read")

    @property
    def label(self) -> str:
        if self.note:
            return self.note
        if self.state in UNCOUNTED:
            return self.state
        return f"+{self.added} −{self.removed}"
