"""`ctxtui watch`'s header: the screen writes into it which log, model and thresholds, how far the
reading got, and the lines skipped."""
from __future__ import annotations

from textual.widgets import Static


class WatchHeader(Static):
    """Which file, which model and thresholds, how far the reading got, and skipped lines."""
