"""Where ctxtui keeps its files (DESIGN §7) and how sessions are named.

`home` is the folder that *contains* `.ctxtui/` (the workspace unless CTXTUI_HOME says otherwise):

    <home>/.ctxtui/sessions/<id>.jsonl                       the session log
    <home>/.ctxtui/sessions/<id>/transcripts/...jsonl        history at each compaction
    <home>/.ctxtui/sessions/<id>/tool-results/<id>.txt       persisted large tool outputs

Session ids sort by creation time as plain strings: `20261130T081500-ab12cd` (UTC, then 6 random
hex digits so two sessions started in the same second never collide).
"""
from __future__ import annotations

import re
import secrets
import time
from pathlib import Path

STATE_DIRNAME = ".ctxtui"
SESSION_ID_RE = re.compile(r"^\d{8}T\d{6}-[0-9a-f]{6}$")


def new_session_id(now: float | None = None) -> str:
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(time.time() if now is None else now))
    return f"{stamp}-{secrets.token_hex(3)}"


def is_session_id(value: str) -> bool:
    return bool(SESSION_ID_RE.match(value or ""))


def state_dir(home: Path) -> Path:
    return Path(home) / STATE_DIRNAME


def sessions_dir(home: Path) -> Path:
    return state_dir(home) / "sessions"


def session_log_path(home: Path, session_id: str) -> Path:
    _check_id(session_id)
    return sessions_dir(home) / f"{session_id}.jsonl"


def session_dir(home: Path, session_id: str) -> Path:
    """The per-session folder (transcripts, tool results); created by whoever writes there first."""
    _check_id(session_id)
    return sessions_dir(home) / session_id


def transcripts_dir(home: Path, session_id: str) -> Path:
    return session_dir(home, session_id) / "transcripts"


def tool_results_dir(home: Path, session_id: str) -> Path:
    return session_dir(home, session_id) / "tool-results"


def _check_id(session_id: str) -> None:
    # Ids come from --resume: refuse anything that could climb out of the sessions folder.
    if not session_id or "/" in session_id or "\\" in session_id or session_id in (".", "..") \
            or session_id.startswith("."):
        raise ValueError(f"not a session id: {session_id!r} (expected something like 20261130T081500-ab12cd)")
