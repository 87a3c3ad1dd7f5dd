"""The workspace's files for the @-mention picker: what git tracks or would track (`git ls-files
--cached --others --exclude-standard`, so .gitignore is honoured) in a git repository, else a walk
that skips the tools' SKIP_DIRS; never ctxtui's own state, at most `cap` paths. Blocking: the TUI
runs it in a thread worker (a 50,000-file repository lists in well under a second)."""
from __future__ import annotations

import os
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

from agent_core.tools.base import SKIP_DIRS
from agent_core.tools.walk import walk

MAX_FILES = 20_000        # the picker matches every keystroke over the list: keep it bounded
GIT_TIMEOUT_S = 10.0
# A repository's own config could name a program for git to run (core.fsmonitor): never let it.
GIT = ("git", "-c", "core.fsmonitor=false", "-c", "core.untrackedCache=false")


@dataclass(frozen=True)
class FileList:
    paths: tuple[str, ...]    # '/'-separated, relative to the workspace, sorted
    capped: bool              # the workspace has more files than were kept
    source: str               # "git" | "walk"


def _git_files(root: Path) -> list[str] | None:
    """Every file git lists (tracked, and untracked but not ignored), or None outside a repository
    (or without git)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["GIT_OPTIONAL_LOCKS"] = "0"      # listing must not take the index lock from a running git
    try:
        done = subprocess.run([*GIT, "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
                              cwd=root, env=env, capture_output=True, timeout=GIT_TIMEOUT_S,
                              stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    raw = done.stdout.decode("utf-8", errors="surrogateescape")
    return [p for p in raw.split("\0") if p]


def _walk_files(root: Path, skip_dirs: frozenset[str], protected: tuple[Path, ...], cap: int,
                stop: threading.Event) -> list[str]:
    out = []
    for rel, _, is_dir in walk(root, root, skip_dirs, stop, protected):
        if not is_dir:
            out.append(rel)
            if len(out) > cap:
                break
    return out


def _fenced(root: Path, protected: tuple[Path, ...]) -> tuple[str, ...]:
    """The protected folders inside the workspace, as relative prefixes ('.ctxtui/')."""
    out = []
    for p in protected:
        try:
            out.append(Path(os.path.realpath(p)).relative_to(root).as_posix().rstrip("/") + "/")
        except ValueError:
            continue
    return tuple(out)


def list_files(root: Path, *, skip_dirs: frozenset[str] = SKIP_DIRS, protected: tuple[Path, ...] = (),
               cap: int = MAX_FILES, stop: threading.Event | None = None) -> FileList:
    """The workspace's files, gitignore honoured in a repository (see the module docstring)."""
    root = Path(os.path.realpath(root))
    stop = stop or threading.Event()
    found = _git_files(root)
    source = "git"
    if found is None:
        found, source = _walk_files(root, skip_dirs, protected, cap, stop), "walk"
    fenced = _fenced(root, protected)
    kept = sorted({p for p in found
                   if not skip_dirs.intersection(p.split("/")[:-1]) and not p.startswith(fenced)})
    return FileList(tuple(kept[:cap]), len(kept) > cap, source)
