"""The agent's built-in tools (DESIGN §10): bash, read_file, write_file, edit_file, glob, grep,
compact; the workspace sandbox; the registry the loop calls."""
from .base import SECRET_ENV_VARS, Tool, ToolContext, ToolError, ToolOutput
from .bash import BashTool, CappedText
from .compact import CompactTool
from .edit_file import EditFileTool
from .glob_tool import GlobTool
from .grep import GrepTool
from .read_file import ReadFileTool
from .registry import BUILTIN_TOOLS, ToolRegistry
from .sandbox import SandboxError, resolve_path
from .write_file import WriteFileTool

__all__ = [
    "SECRET_ENV_VARS", "Tool", "ToolContext", "ToolError", "ToolOutput", "BashTool", "CappedText",
    "CompactTool", "EditFileTool", "GlobTool", "GrepTool", "ReadFileTool", "BUILTIN_TOOLS",
    "ToolRegistry", "SandboxError", "resolve_path", "WriteFileTool",
]
