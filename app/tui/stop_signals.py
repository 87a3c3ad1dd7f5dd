"""SIGTERM and SIGHUP reach the app even when its event loop is flooded with input.

`loop.add_signal_handler` learns which signal came from a byte that the C-level handler writes to
the loop's self-pipe (signal.set_wakeup_fd). That socket holds about 280 one-byte writes, and
`call_soon_threadsafe` writes one too: Textual's input thread calls it for every key and mouse
event. A burst of them while the loop is busy (a key held down, the mouse swept across the window
to close it) fills the pipe, the signal's byte is dropped, and its handler never runs: the terminal
is gone, yet ctxtui runs on and holds its session. A handler set with `signal.signal` runs from a
flag the C handler sets, on the main thread, however full the pipe is; it hands the signal to the
loop with `call_soon_threadsafe`, whose callback is queued even when its wake-up byte is not written.
"""
from __future__ import annotations

import asyncio
import signal
from typing import Any, Callable, Iterable


class StopSignals:
    """Calls `on_signal(sig)` on the event loop for each of the caught signals, until released."""

    def __init__(self, on_signal: Callable[[int], None]) -> None:
        self._on_signal = on_signal
        self._previous: dict[int, Any] = {}

    def catch(self, signals: Iterable[int]) -> None:
        """From inside the running loop; does nothing off the main thread (signals never reach it)."""
        loop = asyncio.get_running_loop()

        def handler(sig: int, _frame: object) -> None:
            if not loop.is_closed():
                loop.call_soon_threadsafe(self._on_signal, sig)

        for sig in signals:
            try:
                self._previous[sig] = signal.signal(sig, handler)
            except ValueError:
                return

    def release(self) -> None:
        """The handlers from before `catch`."""
        for sig, previous in self._previous.items():
            signal.signal(sig, signal.SIG_DFL if previous is None else previous)
        self._previous.clear()
