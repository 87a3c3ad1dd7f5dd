"""When a session began, for `/cost`'s wall time: the meta line's `created` when the log was read
(resume), else the stamp a session id is made of (`paths.new_session_id`: UTC, to the second)."""
from __future__ import annotations

import calendar
import time

from agent_core.sessions.paths import is_session_id


def _utc(stamp: str, pattern: str) -> float | None:
    try:
        return float(calendar.timegm(time.strptime(stamp, pattern)))
    except (ValueError, TypeError):
        return None


def session_started(session_id: str, created: object = None) -> float | None:
    """Epoch seconds the session began, or None when neither says."""
    if isinstance(created, str):
        t = _utc(created, "%Y-%m-%dT%H:%M:%SZ")
        if t is not None:
            return t
    if is_session_id(session_id):
        return _utc(session_id.split("-", 1)[0], "%Y%m%dT%H%M%S")
    return None
