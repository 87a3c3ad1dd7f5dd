"""Where ctxtui keeps its files and how sessions are named.

ctxtui's state lives in the user's state folder, never in the workspace, so nothing a tool can
write (tools are confined to the workspace) can rewrite a session log, widen a permission or plant
a symlink for ctxtui to follow:

    <root>                      $CTXTUI_HOME, else $XDG_STATE_HOME/ctxtui, else ~/.local/state/ctxtui
    <root>/projects/<key>/      one folder per workspace (`project_key`): the "state dir" below
    <state>/sessions/<id>.jsonl                         the session log
    <state>/sessions/<id>/transcripts/...jsonl          history at each compaction (agent_core/logs/layout.py)
    <state>/sessions/<id>/tool-results/<id>.txt         persisted large tool outputs

Every folder from the root down is created 0700 and must be a real folder owned by this user
(`ensure_state_dir`); a symlink or someone else's folder is refused, not followed. Above the root
(`check_root_path`), a symlink in the path is followed only when nothing but root could have made
it: the link and the folder holding it belong to root and only root can write that folder (and
when ctxtui runs as root itself, only the links directly in `/`, such as macOS's `/var` and
`/tmp`). So `CTXTUI_HOME=ws/link/state` with `ws/link -> /elsewhere` is refused, while a system
link like `/var -> /private/var` still works.

Session ids sort by creation time as plain strings: `20261130T081500-ab12cd` (UTC, then 6 random
hex digits so two sessions started in the same second never collide).
"""
from __future__ import annotations

import os
import re
import stat
import time
from pathlib import Path

from compaction.private_dir import UnsafeDir, check_private_dir, ensure_private_dir

TYPE_CHECKING = False    # typing stays unloaded at run time: 3 ms of every status line call
if TYPE_CHECKING:
    from typing import Mapping

__all__ = ["UnsafeDir", "check_private_dir", "check_root_path"]

SESSION_ID_RE = re.compile(r"^\d{8}T\d{6}-[0-9a-f]{6}$")


def new_session_id(now: float | None = None) -> str:
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(time.time() if now is None else now))
    import secrets  # noqa: PLC0415  (start-up time: the status line needs only state_root)
    return f"{stamp}-{secrets.token_hex(3)}"


def is_session_id(value: str) -> bool:
    return bool(SESSION_ID_RE.match(value or ""))


def state_root(environ: Mapping[str, str] | None = None) -> Path:
    """`$CTXTUI_HOME`, else `$XDG_STATE_HOME/ctxtui`, else `~/.local/state/ctxtui` (absolute)."""
    env = os.environ if environ is None else environ
    if (home := (env.get("CTXTUI_HOME") or "").strip()):
        return Path(home).expanduser().absolute()
    if (xdg := (env.get("XDG_STATE_HOME") or "").strip()):
        return Path(xdg).expanduser().absolute() / "ctxtui"
    user_home = (env.get("HOME") or "").strip()
    return (Path(user_home) if user_home else Path.home()) / ".local" / "state" / "ctxtui"


def project_key(workspace: Path) -> str:
    """A folder name for a workspace: its path with every other character turned into `-` (as
    Claude Code names its project folders), cut to 80 characters, plus 8 hex digits of the full
    path's hash so two workspaces never share a folder."""
    text = str(Path(workspace))
    readable = re.sub(r"[^A-Za-z0-9._]", "-", text)[-80:]
    import hashlib  # noqa: PLC0415  (start-up time: hashlib loads OpenSSL, 3 ms of every status line)
    return f"{readable}-{hashlib.sha256(text.encode('utf-8', 'surrogateescape')).hexdigest()[:8]}"


def project_state_dir(root: Path, workspace: Path) -> Path:
    return Path(root) / "projects" / project_key(workspace)


MAX_LINK_HOPS = 40   # as the kernel's own limit on links followed in one path (ELOOP)


def _trusted_link(folder: Path, link_stat: os.stat_result) -> bool:
    """A symlink in the real folder `folder` that no one but root could have made or can replace:
    root owns it and the folder, and the folder is writable by its owner only. When ctxtui runs as
    root, anything it runs could have made such a link too, so then only a link directly in `/`
    counts (a repository cloned or unpacked by root puts its links deeper)."""
    try:
        holder = os.lstat(folder)
    except OSError:
        return False
    if link_stat.st_uid != 0 or holder.st_uid != 0 or holder.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return False
    running_as_root = hasattr(os, "geteuid") and os.geteuid() == 0
    return not running_as_root or folder == Path(folder.anchor)


def check_root_path(root: Path) -> None:
    """Refuse a state root whose path goes through a symlink someone other than root could have
    planted (`_trusted_link`): each component above the root is looked at without following it,
    from `/` down, and a trusted link is followed by walking its target the same way. Components
    that do not exist yet are made by `ensure_state_dir` as real folders. Raises UnsafeDir."""
    root = Path(root)
    todo = list(root.parent.parts[1:])
    here = Path(root.anchor or "/")   # always a real folder: every link on the way is replaced by its target
    hops = 0
    while todo:
        name = todo.pop(0)
        if name in ("", "."):
            continue
        if name == "..":
            here = here.parent
            continue
        nxt = here / name
        try:
            st = os.lstat(nxt)
        except (FileNotFoundError, NotADirectoryError):
            return   # made (or refused) by ensure_state_dir
        if not stat.S_ISLNK(st.st_mode):
            here = nxt
            continue
        target = os.readlink(nxt)
        if not _trusted_link(here, st):
            raise UnsafeDir(f"{nxt} is a symlink (to {target}) in the path of ctxtui's state folder {root}; "
                            "ctxtui follows no link there that someone other than root could have made. "
                            "Remove the link, or set CTXTUI_HOME to a path without one.")
        hops += 1
        if hops > MAX_LINK_HOPS:
            raise UnsafeDir(f"the path of ctxtui's state folder {root} goes through too many symlinks; "
                            "set CTXTUI_HOME to a path without them.")
        parts = Path(target).parts
        if os.path.isabs(target):
            here, parts = Path(parts[0]), parts[1:]
        todo[:0] = list(parts)


def ensure_state_dir(root: Path, state: Path) -> Path:
    """Create `state` (below `root`) and every folder between, 0700, checking each one on the way,
    existing or new (`check_private_dir`), after checking the path above the root
    (`check_root_path`). Raises UnsafeDir, or the OSError of a failed mkdir."""
    root, state = Path(root), Path(state)
    parts = state.relative_to(root).parts
    check_root_path(root)
    for i in range(len(parts) + 1):
        ensure_private_dir(root.joinpath(*parts[:i]))
    return state


def sessions_dir(state: Path) -> Path:
    return Path(state) / "sessions"


def session_log_path(state: Path, session_id: str) -> Path:
    _check_id(session_id)
    return sessions_dir(state) / f"{session_id}.jsonl"


def session_dir(state: Path, session_id: str) -> Path:
    """The per-session folder (transcripts, tool results); created by whoever writes there first."""
    _check_id(session_id)
    return sessions_dir(state) / session_id


def tool_results_dir(state: Path, session_id: str) -> Path:
    return session_dir(state, session_id) / "tool-results"


def file_history_dir(state: Path, session_id: str) -> Path:
    return session_dir(state, session_id) / "file-history"


def _check_id(session_id: str) -> None:
    # Ids come from --resume: refuse anything that could climb out of the sessions folder.
    if not session_id or "/" in session_id or "\\" in session_id or session_id in (".", "..") \
            or session_id.startswith("."):
        raise ValueError(f"not a session id: {session_id!r} (expected something like 20261130T081500-ab12cd)")
