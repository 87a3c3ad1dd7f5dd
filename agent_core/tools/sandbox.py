"""Path confinement: every path a tool touches resolves inside the workspace.

Two checks, both required: the path as written (after `..` is folded) must stay inside, and the
real path (after following symlinks) must too. Either failure is refused with a message naming
the path and the workspace, so the model knows what to ask for instead."""
from __future__ import annotations

import os
from pathlib import Path

from agent_core.tools.base import ToolContext, ToolError


class SandboxError(ToolError):
    """A path outside the workspace."""


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _via_alias(path: str, root: str) -> bool:
    """An absolute path through a symlinked name of the workspace itself (e.g. /tmp vs /private/tmp)."""
    return os.path.isabs(path) and ".." not in Path(path).parts and _inside(os.path.realpath(path), root)


def is_protected(path: str | Path, protected: tuple[Path, ...]) -> bool:
    """True when `path` (already real) lies in one of ctxtui's own state folders."""
    return any(_inside(str(path), str(p)) for p in protected)


def _refuse_protected(path: str, where: tuple[str, ...], protected: tuple[Path, ...]) -> None:
    if any(is_protected(w, protected) for w in where):
        raise SandboxError(f"'{path}' is ctxtui's own state; tools cannot read or change it. "
                           f"Work with the files of the workspace instead.")


def resolve_path(workspace: Path, path: str, protected: tuple[Path, ...] = ()) -> Path:
    """The real absolute path for `path` (relative to the workspace, or absolute), or SandboxError.
    The file need not exist (write_file creates it). Paths inside `protected` (real paths of
    ctxtui's own state folders) are refused too: a tool that could edit a session log could
    grant itself permissions on the next resume."""
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
    _refuse_protected(path, (written, real), protected)
    return Path(real)


def resolve(ctx: ToolContext, path: str, *, spill_ok: bool = False) -> Path:
    """`resolve_path` with the context's protected folders. With `spill_ok` (the reading tools), a
    file in bash's spill folder or in the session's transcripts folder is allowed as well, although
    both are part of ctxtui's state and usually outside the workspace: a capped bash result names
    its file and a summary names its transcript (written through the scrubber, as the model saw it)
    and each says to read it when needed."""
    try:
        return resolve_path(ctx.workspace, path, ctx.protected)
    except SandboxError:
        spilled = _spill_file(ctx, path) if spill_ok else None
        if spilled is None:
            raise
        return spilled


def _spill_file(ctx: ToolContext, path: str) -> Path | None:
    """`path`'s real location when it lies in bash's spill folder or the transcripts folder, else None."""
    expanded = os.path.expanduser(path) if path.startswith("~") else path
    real = os.path.realpath(os.path.join(str(ctx.workspace), expanded))
    for folder in (ctx.spill_dir, ctx.transcript_dir):
        if folder is not None and _inside(real, os.path.realpath(folder)):
            return Path(real)
    return None


def is_inside(workspace: Path, path: Path) -> bool:
    """True when `path`'s real location is inside the workspace (used to skip escaping symlinks in walks)."""
    return _inside(os.path.realpath(path), str(workspace))
