"""The agent's parts on their own: what they return for the inputs that matter, without a loop."""
from __future__ import annotations

from dataclasses import asdict, replace
from pathlib import Path

import pytest

from compaction import Entry

from agent_core.loop.counting import CALIBRATE_MIN_ANSWERS, CALIBRATION_BOUNDS, SavedCalibration
from agent_core.loop.session_writer import SessionWriter
from agent_core.loop.turn_state import TurnLimits, over_limit
from agent_core.sessions.session_log import SessionWriteError


def test_a_damaged_calibration_reads_as_not_learnt():
    saved = SavedCalibration.read({"ratio": "1.2", "head": True, "head_estimate": 2.5, "overhead_adjust": "7",
                                   "answers_real": -3, "ratio_from": 1, "view_end": ["x"]})
    assert saved == SavedCalibration()
    assert SavedCalibration.read(None) == SavedCalibration()


def test_what_is_written_reads_back_the_same():
    learnt = replace(SavedCalibration(), ratio=1.25, ratio_from="added", head=4_000, head_estimate=3_500,
                     overhead_adjust=-12, view_end="u-1")
    assert SavedCalibration.read(asdict(learnt)) == learnt


def test_the_counted_head_is_used_only_for_the_head_it_counted():
    saved = SavedCalibration(head=4_000, head_estimate=3_500)
    assert saved.head_of(3_500) == 4_000
    assert saved.head_of(3_600) is None     # the system prompt or the tools changed since


def test_answers_get_their_own_rate_once_enough_are_seen_and_within_bounds():
    few = SavedCalibration(ratio=1.1, answers_real=100.0, answers_estimate=CALIBRATE_MIN_ANSWERS - 1.0)
    assert few.assistant is None
    enough = replace(few, answers_real=9_999.0, answers_estimate=float(CALIBRATE_MIN_ANSWERS))
    assert enough.assistant == CALIBRATION_BOUNDS[1]
    assert replace(enough, ratio=None).assistant is None   # no request ratio learnt yet: no answer rate either


class Recorder:
    """A session log that fails when told to, and keeps what it was asked to write."""

    session_id = "s"
    path = Path("/nonexistent")
    loaded = None

    def __init__(self) -> None:
        self.writes: list[tuple[str, object]] = []
        self.fail = False

    def _do(self, kind: str, what: object) -> None:
        if self.fail:
            raise SessionWriteError("disk full")
        self.writes.append((kind, what))

    def append_entry(self, entry):
        self._do("entry", entry)

    def append_history(self, entries):
        self._do("history", list(entries))

    def append_event(self, event):
        self._do("event", event)

    def append_state(self, state):
        self._do("state", dict(state))

    def sync(self, entries):
        self._do("sync", list(entries))

    def close(self):
        pass


def test_a_state_snapshot_writes_only_the_parts_that_changed():
    log = Recorder()
    writer = SessionWriter(log, lambda: [])
    writer.state({"turns": 1, "cost": {"usd": 0.5}})
    writer.state({"turns": 2, "cost": {"usd": 0.5}})
    writer.state({"turns": 2, "cost": {"usd": 0.5}})
    assert log.writes == [("state", {"turns": 1, "cost": {"usd": 0.5}}), ("state", {"turns": 2})]


def test_after_a_failed_write_the_next_one_first_catches_the_log_up():
    history = [Entry({"role": "user", "content": "hi"})]
    log = Recorder()
    writer = SessionWriter(log, lambda: history)
    log.fail = True
    with pytest.raises(SessionWriteError):
        writer.entry(history[0])
    log.fail = False
    writer.event({"type": "notice"})
    assert [kind for kind, _ in log.writes] == ["sync", "event"]
    assert log.writes[0][1] == history
    with writer.paused():
        assert writer.event({"type": "notice"}) is False
    assert len(log.writes) == 2


def test_the_limits_stop_a_run_and_say_which():
    assert over_limit(TurnLimits(max_turns=3), 2, None) is None
    assert over_limit(TurnLimits(max_turns=3), 3, None)[0] == "max_turns"
    reason, said = over_limit(TurnLimits(max_budget_usd=1.0), 0, 1.25)
    assert reason == "budget" and "$1.2500" in said and "--max-budget-usd" in said
    assert over_limit(TurnLimits(max_budget_usd=1.0), 0, None) is None   # an unpriced session is not stopped
