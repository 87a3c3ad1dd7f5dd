"""A summary being written: its text streams in while the elapsed time ticks in the title."""
from __future__ import annotations

import time
from dataclasses import dataclass

from textual.content import Content
from textual.timer import Timer
from textual.widgets import Collapsible, Static

from agent_core.security.visible_text import visible

from app import format as fmt


@dataclass(slots=True)
class LiveCompactionRecord:
    """A paged-out summary call: what it summarized, the text it wrote and its closing title."""
    tokens_before: int
    text: str
    outcome: str | None
    started: float

    def build(self) -> "LiveCompaction":
        w = LiveCompaction(self.tokens_before)
        w.started, w.text, w.outcome = self.started, self.text, self.outcome
        w.body.update(Content(visible(self.text) or "(no text)"))
        w.title = Content(self.outcome) if self.outcome is not None else w._heading()
        w.collapsed = self.outcome is not None
        if self.outcome is not None:
            w.remove_class("-running")
            w.add_class("-error" if self.outcome.startswith("✗") else "-ok")
        return w


class LiveCompaction(Collapsible):
    """A summary being written: the elapsed time in the title, the text streaming into the body.
    Open while it runs; once the call ends it collapses to one line (the marker follows)."""

    def __init__(self, tokens_before: int = 0) -> None:
        self.text = ""
        self.tokens_before = tokens_before
        self.started = time.monotonic()
        self.outcome: str | None = None       # the closing title, once ended
        self._ticker: Timer | None = None     # ticks the elapsed time while mounted and running
        self._show_scheduled = False
        self.body = Static(Content("waiting for the model…"), classes="live-summary-body")
        super().__init__(self.body, title=self._heading(), collapsed=False, classes="live-summary -running")

    def record(self) -> LiveCompactionRecord:
        return LiveCompactionRecord(self.tokens_before, self.text, self.outcome, self.started)

    def clone(self) -> "LiveCompaction":
        return self.record().build()

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
        """A delta of the summary: the body and title show it on the next frame (once per frame
        however many deltas came)."""
        self.text += text
        if not self._show_scheduled:
            self._show_scheduled = True
            self.call_after_refresh(self._show_text)

    def _show_text(self) -> None:
        self._show_scheduled = False
        if self.text:
            self.body.update(Content(visible(self.text)))
        if self.outcome is None:
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
