"""Where ctxtui keeps its files and how sessions are named.

ctxtui's state lives in the user's state folder, never in the workspace, so nothing a tool can
write (tools are confined to the workspace) can rewrite a session log, widen a permission or plant
a symlink for ctxtui to follow:

    <root>                      $CTXTUI_HOME, else $XDG_STATE_HOME/ctxtui, else ~/.local/state/ctxtui
    <root>/projects/<key>/      one folder per workspace (`project_key`): the "state dir" below
    <state>/sessions/<id>.jsonl                         the session log
    <state>/sessions/<id>/transcripts/...jsonl          history at each compaction
    <state>/sessions/<id>/tool-results/<id>.txt         persisted large tool outputs

Every folder from the root down is created 0700 and must be a real folder owned by this user
(`ensure_state_dir`); a symlink or someone else's folder is refused, not followed.

Session ids sort by creation time as plain strings: `20261130T081500-ab12cd` (UTC, then 6 random
hex digits so two sessions started in the same second never collide).
"""
from __future__ import annotations

import hashlib
import os
import re
import secrets
import time
from pathlib import Path
from typing import Mapping

from compaction.transcript import UnsafeDir, check_private_dir, ensure_private_dir

__all__ = ["UnsafeDir", "check_private_dir"]

SESSION_ID_RE = re.compile(r"^\d{8}T\d{6}-[0-9a-f]{6}$")


def new_session_id(now: float | None = None) -> str:
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(time.time() if now is None else now))
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
    return f"{readable}-{hashlib.sha256(text.encode('utf-8', 'surrogateescape')).hexdigest()[:8]}"


def project_state_dir(root: Path, workspace: Path) -> Path:
    return Path(root) / "projects" / project_key(workspace)


def ensure_state_dir(root: Path, state: Path) -> Path:
    """Create `state` (below `root`) and every folder between, 0700, checking each one on the way,
    existing or new (`check_private_dir`). Raises UnsafeDir, or the OSError of a failed mkdir."""
    root, state = Path(root), Path(state)
    parts = state.relative_to(root).parts
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


def _check_id(session_id: str) -> None:
    # Ids come from --resume: refuse anything that could climb out of the sessions folder.
    if not session_id or "/" in session_id or "\\" in session_id or session_id in (".", "..") \
            or session_id.startswith("."):
        raise ValueError(f"not a session id: {session_id!r} (expected something like 20261130T081500-ab12cd)")
