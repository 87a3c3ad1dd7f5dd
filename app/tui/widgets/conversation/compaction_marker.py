"""A compaction boundary in the conversation; selecting it opens the inspector."""
from __future__ import annotations

from dataclasses import dataclass

from textual.content import Content
from textual.message import Message
from textual.widgets import Static

from agent_core import events as ev
from agent_core.security.visible_text import one_line, visible

from app import format as fmt


@dataclass(slots=True)
class MarkerRecord:
    """A paged-out compaction boundary: the figures it shows (and the live event, when it had one)."""
    layer: str
    trigger: str
    before: int
    after: int
    transcript_path: str | None = None
    action: str = ""
    cache: dict | None = None
    duration_s: float | None = None
    event: ev.Compaction | None = None

    def build(self) -> "CompactionMarker":
        return CompactionMarker(self.layer, self.trigger, self.before, self.after, self.transcript_path,
                                self.action, self.cache, self.duration_s, self.event)


class CompactionMarker(Static):
    """A compaction boundary: what ran, why, how much it freed and where the transcript is. Click
    it (or Enter on it) to open the inspector: `Selected` goes up to the app."""

    can_focus = True
    BINDINGS = [("enter", "inspect", "Inspect")]

    class Selected(Message):
        def __init__(self, marker: "CompactionMarker") -> None:
            self.marker = marker
            super().__init__()

    def __init__(self, layer: str, trigger: str, before: int, after: int,
                 transcript_path: str | None = None, action: str = "", cache: dict | None = None,
                 duration_s: float | None = None, event: ev.Compaction | None = None) -> None:
        self.event = event       # the loop's event when it was live (a resumed boundary has none)
        self.compaction_layer, self.trigger = layer, trigger
        self.tokens_before, self.tokens_after = before, after
        self.transcript_path = transcript_path
        self.action = action
        self.cache = cache
        self.duration_s = duration_s
        head = (f"── compacted · {one_line(layer)} ({one_line(trigger)}) · {fmt.tokens(before)} → "
                f"{fmt.tokens(after)} tokens "
                f"(freed {fmt.tokens(max(0, before - after))})")
        if duration_s:
            head += f" in {fmt.duration(duration_s)}"
        parts: list = [(head, "bold")]
        if action:
            # The layer's own words often repeat the transcript path: name it once, below.
            said = action.replace(transcript_path, "the transcript") if transcript_path else action
            parts.append(("\n   " + visible(said), ""))
        clause = fmt.cache_clause(cache)
        if clause and "per call" not in action:   # the layer's action usually says it already
            parts.append(("\n   " + clause, "dim"))
        if transcript_path:
            parts += ["\n   transcript: ", (fmt.path(transcript_path), "underline")]
        super().__init__(Content.assemble(*parts), classes="compaction")

    def record(self) -> MarkerRecord:
        return MarkerRecord(self.compaction_layer, self.trigger, self.tokens_before, self.tokens_after,
                            self.transcript_path, self.action, self.cache, self.duration_s, self.event)

    def clone(self) -> "CompactionMarker":
        return self.record().build()

    def on_click(self) -> None:
        self.post_message(self.Selected(self))

    def action_inspect(self) -> None:
        self.post_message(self.Selected(self))
