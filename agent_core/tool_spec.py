"""Names and input shapes of the built-in tools, shared by the tools, the demo model and tests."""
from __future__ import annotations

TOOL_NAMES = ("bash", "read_file", "write_file", "edit_file", "glob", "grep", "compact", "context_status")
# bash {command: str, timeout?: float seconds}
# read_file {path: str, offset?: int (1-based line), limit?: int lines}
# write_file {path: str, content: str}
# edit_file {path: str, old_string: str, new_string: str}
# glob {pattern: str}
# grep {pattern: str (regex), path?: str, glob?: str}
# compact {focus?: str}
# context_status {}
