"""The workspace files this session's tools changed (agent_core/tools/file_history.py): what
/rewind can put back, the changed-files list and /diff. Nothing here without a file history."""
from __future__ import annotations

from compaction import Entry

from agent_core.tools.base import ToolContext
from agent_core.tools.changed_files import ChangedFiles, session_diff
from agent_core.tools.file_restore import Restore, apply_restore, restore_plan


class SessionFiles:
    def __init__(self, tool_ctx: ToolContext) -> None:
        self.tool_ctx = tool_ctx
        self._changed: ChangedFiles | None = None    # made on first use

    def plan(self, entries: list[Entry], index: int) -> list[Restore] | None:
        """What rewinding to the prompt at `index` would put back: each file the agent's tools
        changed since, with its diff; None when that is not known."""
        history = self.tool_ctx.history
        if history is None or not 0 <= index < len(entries):
            return None
        return restore_plan(history, entries[index].uuid)

    def restore(self, plan: list[Restore]) -> list[str]:
        """Put the plan's files back; a line per file."""
        if self.tool_ctx.history is None:
            raise ValueError("This session keeps no file history: there is nothing to restore.")
        return apply_restore(plan, self.tool_ctx, self.tool_ctx.history)

    def changed(self) -> ChangedFiles | None:
        """The files this session's write and edit calls changed, with lines added and removed."""
        history = self.tool_ctx.history
        if history is None:
            return None
        if self._changed is None:
            self._changed = ChangedFiles(history)
        return self._changed

    def diff(self) -> str:
        """Every changed file from before the session to now ('' when nothing changed)."""
        history = self.tool_ctx.history
        return session_diff(history) if history is not None else ""

    def checkpoint(self, entry: Entry) -> None:
        """A prompt (or a shell command) the files can be put back to."""
        if self.tool_ctx.history is not None:
            self.tool_ctx.history.checkpoint(entry.uuid)

    def trouble(self) -> str | None:
        """A copy the file history could not keep (a full disk), once per failure: that change
        cannot be restored by /rewind."""
        history = self.tool_ctx.history
        if history is None or not history.write_error:
            return None
        problem, history.write_error = history.write_error, None
        return f"File history: {problem}; /rewind cannot restore that change."
