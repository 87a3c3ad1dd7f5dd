"""A closed terminal ends ctxtui instead of hanging it.

When the terminal goes (its window closed, an ssh connection dropped) the kernel hangs up the tty:
every later write to it fails with EIO, reads see end of file, and SIGHUP and SIGCONT follow (to
the session leader at once; to the foreground job when the shell it ran from exits). A plain
Textual app dies of the SIGHUP. ctxtui catches it to save the session (CtxApp._stop_signal), and
then Textual's LinuxDriver (textual 8) could leave the process running for good:

- its SIGCONT handler takes the signal for a return from Ctrl+Z and starts application mode again
  on the dead terminal: a new output thread, which ends on its first write (EIO), and 16 writes;
- an output thread that has ended leaves its queue (30 writes at most) with no reader: leaving
  application mode and shutting down add 14 more (15 where the terminal reports resizes in band,
  as kitty, foot and ghostty do), so the queue is full and the stop that the driver's `close()`
  queues blocks the event loop forever; a frame painted after the hang-up does the same anywhere.

`TerminalDriver` is LinuxDriver with both closed: its output thread drops a write that fails (and,
once the terminal is gone, every later one), so it lives to take the stop; and a SIGCONT that comes
when the terminal is gone is ignored. Ctrl+Z and `fg` work as before.
"""
from __future__ import annotations

import os
from typing import IO, Any

from textual.app import App
from textual.drivers.linux_driver import LinuxDriver


class TerminalOutput:
    """The file the driver's output thread writes to: a write that fails never ends the thread.
    A full non-blocking descriptor (EAGAIN: someone set O_NONBLOCK on the tty) loses that write
    only; any other failure (EIO from a hung-up tty, a closed file) means the terminal is gone,
    and nothing more is tried."""

    def __init__(self, file: IO[str]) -> None:
        self._file = file
        self.gone = False

    def write(self, text: str) -> None:
        if not self.gone:
            self._guarded(self._file.write, text)

    def flush(self) -> None:
        if not self.gone:
            self._guarded(self._file.flush)

    def _guarded(self, call: Any, *args: Any) -> None:
        try:
            call(*args)
        except BlockingIOError:
            pass
        except (OSError, ValueError):
            self.gone = True

    def fileno(self) -> int:
        return self._file.fileno()

    def isatty(self) -> bool:
        return not self.gone and self._file.isatty()


class TerminalDriver(LinuxDriver):
    """LinuxDriver that a hung-up terminal cannot wedge (see the module's docstring)."""

    def __init__(self, app: App[Any], **kwargs: Any) -> None:
        self._was_tty = False     # LinuxDriver's __init__ installs the SIGCONT handler, which reads it
        super().__init__(app, **kwargs)
        if self._file is not None:    # None: Python runs with no stderr, and the driver writes nowhere
            # LinuxDriver types the file as the TextIOWrapper it opens; its one use of it is the output
            # thread, which writes, flushes and asks its fileno: what TerminalOutput provides
            self._file = TerminalOutput(self._file)  # type: ignore[assignment]
        self._was_tty = self._output_is_tty()

    def _output_is_tty(self) -> bool:
        try:
            return self._file is not None and os.isatty(self._file.fileno())
        except (OSError, ValueError):
            return False

    def terminal_gone(self) -> bool:
        """The terminal hung up (or its output failed). The kernel marks a hung-up tty before it
        sends SIGHUP and SIGCONT, so both handlers already see it gone."""
        return getattr(self._file, "gone", False) or (self._was_tty and not self._output_is_tty())

    def _sigcont_application(self, *args: Any) -> None:
        """SIGCONT after a hang-up is no return from Ctrl+Z: there is no terminal to resume on."""
        if self.terminal_gone():
            return
        super()._sigcont_application(*args)


def survive_terminal_close(app: App[Any]) -> None:
    """Run `app` on TerminalDriver where Textual would use LinuxDriver; a driver chosen through
    TEXTUAL_DRIVER (`ctxtui serve`'s web driver) is left as it is."""
    if app.driver_class is LinuxDriver:
        app.driver_class = TerminalDriver
