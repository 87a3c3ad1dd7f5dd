"""Whether an Esc cancels the running turn. An Esc pressed while a modal or the maximized pane was
still on screen, or just after it went, is the close pressed twice (the close can take a moment on
a loaded machine), not a wish to stop the turn. What counts is when the key was pressed, not when
the event loop got to it."""
from __future__ import annotations

import time

# An Esc pressed before a closed screen or maximized pane was drawn away, or this soon after, does not
# cancel the turn.
ESC_AFTER_CLOSE_S = 1.0


class EscGuard:
    """`restored_at`: when the main screen last came back from a modal or a maximized pane, drawn
    (time.monotonic; inf: not drawn yet, -inf: never covered)."""

    def __init__(self) -> None:
        self.restored_at = float("-inf")
        self._pressed_at: float | None = None   # when the cancel key being handled was pressed

    def covered_until_drawn(self) -> None:
        """The main screen is back but not drawn yet: no Esc cancels until it is (`drawn`)."""
        self.restored_at = float("inf")

    def drawn(self) -> None:
        self.restored_at = time.monotonic()

    def pressed(self, at: float) -> None:
        """The cancel key was pressed at `at` (the key event's time, time.monotonic's clock)."""
        self._pressed_at = at

    def cancels(self) -> bool:
        """Whether the cancel key being handled may cancel the turn (one answer per press)."""
        pressed, self._pressed_at = self._pressed_at, None
        if pressed is None:
            pressed = time.monotonic()
        return pressed - self.restored_at >= ESC_AFTER_CLOSE_S
