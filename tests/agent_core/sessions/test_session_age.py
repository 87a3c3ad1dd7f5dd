"""The session's start, for /cost's wall time: from the meta line, else from the id's stamp."""
from __future__ import annotations

import calendar

from agent_core.sessions.paths import new_session_id
from agent_core.sessions.session_age import session_started


def test_from_the_id_and_from_the_meta_line():
    t = calendar.timegm((2026, 12, 1, 4, 51, 58, 0, 0, 0))
    assert session_started(new_session_id(t)) == t
    assert session_started("20261201T045158-072149", "2026-12-01T04:50:00Z") == t - 118
    assert session_started("20261201T045158-072149", "not a date") == t


def test_unknown_is_none():
    assert session_started("not-an-id") is None
    assert session_started("", None) is None
