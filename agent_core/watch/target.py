"""Which log `ctxtui watch [PATH]` follows, and which newer session it switches to.

The folders themselves (the default, the newest log under a folder) are agent_core.logs.discover's.
"""
from __future__ import annotations

import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping

from agent_core.logs.discover import (claude_projects_dir, claude_projects_dirs, is_main_log, newest, newest_log,
                                      watch_default_folder, workspace_sessions)
from agent_core.logs.files import describe
from agent_core.security.visible_text import one_line


class WatchError(Exception):
    """A path that cannot be watched; the message says what to do (the CLI exits 2). The message
    names a path anyone may have named (a folder in a shared projects folder): it is kept on one
    line with its control characters shown (`one_line`), wherever it is printed."""

    def __init__(self, message: str) -> None:
        super().__init__(one_line(message))


@dataclass(frozen=True)
class WatchTarget:
    """The log to follow and, when a folder was given, the folder where a newer session may appear.
    `log` is None while there is no log yet: the first one is looked for in `waiting` (see
    `first_log`), the folders where the sessions of that folder or workspace will be written."""
    log: Path | None
    folder: Path | None = None
    waiting: tuple[Path, ...] = ()


def resolve_target(path: str | Path | None, *, cwd: Path | None = None,
                   env: Mapping[str, str] | None = None) -> WatchTarget:
    """The file `ctxtui watch [PATH]` follows. A folder (or the default) without a log yet gives a
    target to wait on (`log` None). Raises WatchError for a path that does not exist or is no
    regular file or folder."""
    cwd = Path.cwd() if cwd is None else Path(cwd)
    given = path is not None
    if path is not None:
        p = Path(path).expanduser()
        p = p if p.is_absolute() else cwd / p
    else:
        p = watch_default_folder(cwd, env)
    if not p.exists():
        if given:
            raise WatchError(f"{p}: no such file or folder. Give a session log (.jsonl) or a folder that holds some.")
        return WatchTarget(None, p, (workspace_sessions(cwd, env), p))
    if not p.is_dir():
        try:
            mode = p.stat().st_mode
        except OSError as e:
            raise WatchError(f"cannot read {p}: {e.strerror or e}. Check the file's permissions.") from None
        if not stat.S_ISREG(mode):
            raise WatchError(f"{p}: not a regular file ({describe(mode)}). Give a session log (.jsonl) or a folder "
                             "that holds some.")
    p = p.resolve()
    if p.is_file():
        return WatchTarget(p)
    found = workspace_logs(p, env) or p
    log = newest_log(found)
    if log is None:
        waiting = ((workspace_sessions(p, env), claude_project_folder(p, env), p) if given
                   else (workspace_sessions(cwd, env), p))
        return WatchTarget(None, p, waiting)
    return WatchTarget(log.resolve(), found)


def first_log(target: WatchTarget, *, deep: bool = True) -> WatchTarget | None:
    """The target to follow once a log appeared in one of `target.waiting` (the newest of them),
    else None. Without `deep` the folder given itself is not walked (it may be a big workspace):
    only the small session folders are, which is cheap enough for every tick of a wait."""
    found = [(newest_log(f), f) for f in target.waiting if (deep or f != target.folder) and f.is_dir()]
    best = newest(log for log, _ in found if log is not None)
    if best is None:
        return None
    folder = next(f for log, f in found if log == best)
    return WatchTarget(best.resolve(), folder.resolve())


def claude_project_folder(workspace: Path, env: Mapping[str, str] | None = None) -> Path:
    """Claude Code's folder for a workspace: its path with every character but letters and digits
    turned into `-`, under the first of Claude Code's projects folders that has it."""
    name = re.sub(r"[^A-Za-z0-9]", "-", str(workspace))
    return next((d / name for d in claude_projects_dirs(env) if (d / name).is_dir()), claude_projects_dir(env) / name)


def workspace_logs(folder: Path, env: Mapping[str, str] | None = None) -> Path | None:
    """When `folder` is a workspace (ctxtui keeps its sessions in the state folder, Claude Code in
    its projects folder, never in the workspace): the one of those folders written last, else None."""
    found = [(newest_log(f), f) for f in (workspace_sessions(folder, env), claude_project_folder(folder, env))
             if f.is_dir()]
    best = newest(log for log, _ in found if log is not None)
    return next((f for log, f in found if log == best), None) if best is not None else None


def switch_candidate(changed: Iterable[str], *, current: Path, followed: set[Path]) -> Path | None:
    """A main log that was just written and has not been followed yet in this run: the newer
    session to switch to (folder mode). Sessions followed before are never switched back to, so
    two sessions written at once do not make the view flip between them."""
    candidates = (Path(raw) for raw in changed)
    return newest(p for p in candidates if p != current and p not in followed and is_main_log(p))
