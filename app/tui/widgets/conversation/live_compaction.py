"""A summary being written: its text streams in while the elapsed time ticks in the title. Open
while it runs; once the call ends it closes to one line (the marker follows)."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from rich.text import Text
from textual.strip import Strip

from agent_core.security.visible_text import visible

from app import format as fmt
from app.tui.widgets.conversation.draw import Look, paragraph, title

BODY_LINES = 12     # the summary's latest lines shown while it is written


@dataclass(slots=True)
class LiveCompactionRecord:
    """A summary call: what it summarizes, the text written so far and, once ended, its closing title."""
    margin = (1, 0)     # blank lines above and below (collapsed with the neighbours')
    tokens_before: int = 0
    text: str = ""
    outcome: str | None = None
    started: float = field(default_factory=time.monotonic)
    expanded: bool = True

    @property
    def running(self) -> bool:
        return self.outcome is None

    def heading(self) -> str:
        if self.outcome is not None:
            return self.outcome
        elapsed = fmt.duration(time.monotonic() - self.started)
        size = f" · {len(self.text):,} chars" if self.text else ""
        return f"⟳ compacting · summarizing {fmt.tokens(self.tokens_before)} tokens · {elapsed}{size}"

    def end(self, ok: bool, duration_s: float, message: str = "") -> None:
        took = fmt.duration(duration_s)
        self.outcome = (f"✓ summary written in {took} · {len(self.text):,} chars" if ok
                        else f"✗ summary failed after {took}: {fmt.one_line(message, 80)}")
        self.expanded = False

    def draw(self, look: Look, width: int) -> list[Strip]:
        style = look.style("live")
        state = "live-running" if self.outcome is None else ("live-error" if self.outcome.startswith("✗") else "live")
        lines = title(look, Text(self.heading(), style=look.style(state)), width,
                                     expanded=self.expanded, style=style)
        if self.expanded:
            body = visible(self.text) or ("waiting for the model…" if self.running else "(no text)")
            if self.running:       # the latest lines, as a log that follows what is written
                body = "\n".join(body.splitlines()[-BODY_LINES:])
            lines += paragraph(look, Text(body, style=look.style("muted")), width, style=style, left=4,
                               max_lines=None if self.running else BODY_LINES)
        return lines
