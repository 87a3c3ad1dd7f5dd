"""The app's screen-free parts (app/tui): whether an Esc cancels the turn (esc_guard.py), the
context history as plot points and the typed prompt's tokens (figures.py), what waits for the side
column (side_column.py), and a resumed compaction marker's logged event (compaction_marker.py)."""
from __future__ import annotations

import pytest

from agent_core import events as ev
from app.tui import esc_guard
from app.tui.esc_guard import EscGuard
from app.tui.figures import HistoryPoints, typed_tokens
from app.tui.side_column import SideColumn
from app.tui.widgets.conversation.compaction_marker import MarkerRecord, logged_compaction


# ----- Esc ------------------------------------------------------------------------------------
def test_an_esc_with_nothing_closed_before_it_cancels():
    assert EscGuard().cancels()


def test_an_esc_pressed_before_the_main_screen_was_drawn_back_does_not_cancel(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(esc_guard.time, "monotonic", lambda: now[0])
    guard = EscGuard()
    guard.covered_until_drawn()
    guard.pressed(99.0)           # on the modal, handled late
    assert not guard.cancels()
    now[0] = 101.0
    guard.drawn()
    guard.pressed(101.0 + esc_guard.ESC_AFTER_CLOSE_S / 2)      # just after: the close pressed twice
    assert not guard.cancels()
    guard.pressed(101.0 + esc_guard.ESC_AFTER_CLOSE_S)          # a moment later: a wish to stop
    assert guard.cancels()


def test_each_press_is_answered_once(monkeypatch):
    now = [50.0]
    monkeypatch.setattr(esc_guard.time, "monotonic", lambda: now[0])
    guard = EscGuard()
    guard.drawn()
    guard.pressed(49.0)
    assert not guard.cancels()
    now[0] = 60.0                 # the next cancel without a recorded press counts from now
    assert guard.cancels()


# ----- figures --------------------------------------------------------------------------------
def test_history_points_convert_what_was_added_and_start_again_for_another_list():
    points = HistoryPoints()
    history = [(1, 1_000, False), (2, 2_000.0, 0)]
    assert points.of(history) == ((1, 1_000, False), (2, 2_000, False))
    history.append((3, 500, 1))
    assert points.of(history) == ((1, 1_000, False), (2, 2_000, False), (3, 500, True))
    history[-1] = (3, 700, True)          # the last entry rewritten: converted again
    assert points.of(history)[-1] == (3, 700, True)
    assert points.of([(9, 9, True)]) == ((9, 9, True),)      # a new agent's list
    history.clear()
    assert points.of(history) == ()


@pytest.mark.parametrize("text", ["", "   \n", "/compact now", "  /help"])
def test_a_command_or_nothing_adds_no_tokens_to_the_next_request(text):
    assert typed_tokens(text) == 0


def test_a_prompt_being_typed_adds_its_estimate():
    short, long = typed_tokens("fix the test"), typed_tokens("fix the test " * 50)
    assert 0 < short < long


# ----- the side column ------------------------------------------------------------------------
def test_what_came_before_the_side_column_runs_in_order_once_it_is_there():
    side, ran = SideColumn(), []
    side.later(lambda: ran.append(1))
    side.later(lambda: ran.append(2))
    assert ran == [] and not side.ready
    side.opened()
    assert ran == [1, 2] and side.ready
    side.later(lambda: ran.append(3))
    assert ran == [1, 2, 3]
    side.opened()                 # nothing is run twice
    assert ran == [1, 2, 3]


# ----- a resumed compaction marker ------------------------------------------------------------
def compaction(before: int, after: int, **kw) -> ev.Compaction:
    return ev.Compaction(layer="autocompact", trigger="auto", tokens_before=before, tokens_after=after,
                         duration_s=1.0, transcript_path=None, **kw)


def test_a_resumed_marker_opens_the_latest_logged_compaction_with_its_figures():
    older, other, latest = compaction(9_000, 2_000, action="first"), compaction(8_000, 1_000), \
        compaction(9_000, 2_000, action="second")
    marker = MarkerRecord("autocompact", "auto", 9_000, 2_000)
    assert logged_compaction(marker, [older, other, latest]) is latest


def test_a_marker_with_no_logged_compaction_is_inspected_as_it_shows():
    marker = MarkerRecord("microcompact", "manual", 5_000, 4_000, "/t/x.jsonl", "cleared 3")
    c = logged_compaction(marker, [compaction(9_000, 2_000)])
    assert (c.layer, c.trigger, c.tokens_before, c.tokens_after, c.transcript_path, c.action) == (
        "microcompact", "manual", 5_000, 4_000, "/t/x.jsonl", "cleared 3")
