"""`ctxtui replay`'s header: the screen writes into it the totals across all sessions, or what is being read."""
from __future__ import annotations

from textual.widgets import Static


class ReplayHeader(Static):
    """Totals across all sessions, or what is being read."""
