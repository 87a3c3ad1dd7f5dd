"""The agent's built-in tools: bash, read_file, write_file, edit_file, glob, grep,
compact; the workspace sandbox; the registry the loop calls."""
from agent_core.tools.base import SECRET_ENV_VARS, Tool, ToolContext, ToolError, ToolOutput
from agent_core.tools.bash import BashTool, CappedText
from agent_core.tools.compact import CompactTool
from agent_core.tools.edit_file import EditFileTool
from agent_core.tools.glob_tool import GlobTool
from agent_core.tools.grep import GrepTool
from agent_core.tools.read_file import ReadFileTool
from agent_core.tools.registry import BUILTIN_TOOLS, ToolRegistry
from agent_core.tools.sandbox import SandboxError, resolve_path
from agent_core.tools.write_file import WriteFileTool

__all__ = [
    "SECRET_ENV_VARS", "Tool", "ToolContext", "ToolError", "ToolOutput", "BashTool", "CappedText",
    "CompactTool", "EditFileTool", "GlobTool", "GrepTool", "ReadFileTool", "BUILTIN_TOOLS",
    "ToolRegistry", "SandboxError", "resolve_path", "WriteFileTool",
]
