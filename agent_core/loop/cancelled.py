"""The tool result a call gets when the user cancels the turn before it finished: the loop
writes it into the history, and the TUI knows it again when a session is resumed (a module of
its own, so the TUI's conversation need not load the loop to read one string)."""
from __future__ import annotations

CANCELLED_RESULT = "Cancelled by the user before this tool finished."
