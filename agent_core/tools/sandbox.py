"""Path confinement: every path a tool touches resolves inside the workspace.

Two checks, both required: the path as written (after `..` is folded) must stay inside, and the
real path (after following symlinks) must too. Either failure is refused with a message naming
the path and the workspace, so the model knows what to ask for instead."""
from __future__ import annotations

import os
from pathlib import Path

from .base import ToolError


class SandboxError(ToolError):
    """A path outside the workspace."""


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _via_alias(path: str, root: str) -> bool:
    """An absolute path through a symlinked name of the workspace itself (e.g. /tmp vs /private/tmp)."""
    return os.path.isabs(path) and ".." not in Path(path).parts and _inside(os.path.realpath(path), root)


def resolve_path(workspace: Path, path: str) -> Path:
    """The real absolute path for `path` (relative to the workspace, or absolute), or SandboxError.
    The file need not exist (write_file creates it)."""
    if not isinstance(path, str) or not path.strip():
        raise ToolError("path is empty; give a path relative to the workspace, e.g. 'src/main.py'")
    if "\x00" in path:
        raise ToolError(f"path {path!r} contains a NUL byte")
    root = str(workspace)
    expanded = os.path.expanduser(path) if path.startswith("~") else path
    written = os.path.normpath(os.path.join(root, expanded))   # join keeps an absolute `expanded`
    if not _inside(written, root) and not _via_alias(expanded, root):
        raise SandboxError(f"'{path}' is outside the workspace {root}; tools can only reach files inside it. "
                           f"Use a path relative to the workspace.")
    real = os.path.realpath(written)
    if not _inside(real, root):
        raise SandboxError(f"'{path}' leads through a symlink to {real}, outside the workspace {root}; "
                           f"tools can only reach files inside it.")
    return Path(real)


def is_inside(workspace: Path, path: Path) -> bool:
    """True when `path`'s real location is inside the workspace (used to skip escaping symlinks in walks)."""
    return _inside(os.path.realpath(path), str(workspace))
