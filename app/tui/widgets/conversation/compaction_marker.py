"""A compaction boundary in the conversation; selecting it (click, or Enter on it) opens the inspector."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from rich.text import Text
from textual.strip import Strip

from agent_core import events as ev
from agent_core.security.visible_text import one_line, visible
from compaction.cache_economics import reread_text
from compaction.loss_report import summary_line

from app import format as fmt
from app.tui.widgets.conversation.draw import Look, paragraph


@dataclass(slots=True)
class MarkerRecord:
    """A compaction boundary: the figures it shows (and the live event, when it had one)."""
    margin = (1, 1)     # blank lines above and below (collapsed with the neighbours')
    layer: str
    trigger: str
    before: int
    after: int
    transcript_path: str | None = None
    action: str = ""
    cache: dict | None = None
    duration_s: float | None = None
    event: ev.Compaction | None = None

    @classmethod
    def of(cls, c: ev.Compaction) -> "MarkerRecord":
        return cls(c.layer, c.trigger, c.tokens_before, c.tokens_after, c.transcript_path, c.action, c.cache,
                   c.duration_s, c)

    def content(self) -> Text:
        """What ran, why, how much it freed and where the transcript is."""
        head = (f"── compacted · {one_line(self.layer)} ({one_line(self.trigger)}) · {fmt.tokens(self.before)} → "
                f"{fmt.tokens(self.after)} tokens (freed {fmt.tokens(max(0, self.before - self.after))})")
        if self.duration_s:
            head += f" in {fmt.duration(self.duration_s)}"
        text = Text(head, style="bold")
        if self.action:
            # The layer's own words often repeat the transcript path: name it once, below.
            said = self.action.replace(self.transcript_path, "the transcript") if self.transcript_path else self.action
            text.append("\n   " + visible(said))
        clause = fmt.cache_clause(self.cache)
        if clause and "per call" not in self.action:   # the layer's action usually says it already
            text.append("\n   " + clause, "dim")
        parts = self.event.parts if self.event is not None else None
        loss = parts.get("loss") if parts else None
        if isinstance(loss, dict):
            # the re-reads the engine expected go beside the files gone, unless the action said them
            rereads = reread_text(self.cache)
            cache = None if rereads and rereads in self.action else self.cache
            text.append("\n   lost: " + visible(summary_line(loss, cache)), "dim")
        if self.transcript_path:
            text.append("\n   transcript: ")
            text.append(fmt.path(self.transcript_path), "underline")
        return text

    def draw(self, look: Look, width: int) -> list[Strip]:
        return paragraph(look, self.content(), width, style=look.style("marker"))


def logged_compaction(m: MarkerRecord, compactions: Sequence[ev.Compaction]) -> ev.Compaction:
    """A resumed boundary's compaction, for the inspector: the logged event with the same figures
    (the latest such), or one made of what the marker shows."""
    for c in reversed(compactions):
        if (c.layer, c.tokens_before, c.tokens_after) == (m.layer, m.before, m.after):
            return c
    return ev.Compaction(layer=m.layer, trigger=m.trigger, tokens_before=m.before,
                         tokens_after=m.after, transcript_path=m.transcript_path, action=m.action)
