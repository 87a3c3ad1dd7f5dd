"""A summary being written: its text streams in while the elapsed time ticks in the title."""
from __future__ import annotations

import time

from textual.content import Content
from textual.timer import Timer
from textual.widgets import Collapsible, Static

from agent_core.security.visible_text import visible

from app import format as fmt


class LiveCompaction(Collapsible):
    """A summary being written: the elapsed time in the title, the text streaming into the body.
    Open while it runs; once the call ends it collapses to one line (the marker follows)."""

    def __init__(self, tokens_before: int = 0) -> None:
        self.text = ""
        self.tokens_before = tokens_before
        self.started = time.monotonic()
        self.outcome: str | None = None       # the closing title, once ended
        self._ticker: Timer | None = None     # ticks the elapsed time while mounted and running
        self.body = Static(Content("waiting for the model…"), classes="live-summary-body")
        super().__init__(self.body, title=self._heading(), collapsed=False, classes="live-summary -running")

    def clone(self) -> "LiveCompaction":
        w = LiveCompaction(self.tokens_before)
        w.text, w.outcome = self.text, self.outcome
        w.body.update(Content(visible(self.text) or "(no text)"))
        w.title = Content(self.outcome) if self.outcome is not None else self._heading()
        w.collapsed = self.outcome is not None
        return w

    def on_mount(self) -> None:
        if self.outcome is None:
            self._ticker = self.set_interval(1.0, self._tick)

    def _heading(self) -> Content:
        elapsed = fmt.duration(time.monotonic() - self.started)
        size = f" · {len(self.text):,} chars" if self.text else ""
        return Content(f"⟳ compacting · summarizing {fmt.tokens(self.tokens_before)} tokens · {elapsed}{size}")

    def _tick(self) -> None:
        if self.outcome is None:
            self.title = self._heading()

    def append(self, text: str) -> None:
        self.text += text
        self.body.update(Content(visible(self.text)))
        self.title = self._heading()

    def end(self, ok: bool, duration_s: float, message: str = "") -> None:
        if self._ticker is not None:
            self._ticker.stop()
        took = fmt.duration(duration_s)
        self.outcome = (f"✓ summary written in {took} · {len(self.text):,} chars" if ok
                        else f"✗ summary failed after {took}: {fmt.one_line(message, 80)}")
        self.title = Content(self.outcome)     # the error's words are outside text: never markup
        self.remove_class("-running")
        self.add_class("-ok" if ok else "-error")
        if not self.text:
            self.body.update(Content("(no text)"))
        self.collapsed = True
