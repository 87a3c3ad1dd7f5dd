"""What a layer did: one report per layer that acted, for events, the timeline and the log."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from compaction.entry import Entry


@dataclass(frozen=True)
class CompactionReport:
    layer: str            # tool_result_budget | snip | microcompact | collapse | session_memory | autocompact | breaker
    trigger: str          # auto | manual | reactive | time | budget | ...
    action: str           # one sentence a user can read
    tokens_before: int
    tokens_after: int
    duration_s: float = 0.0
    transcript_path: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def freed(self) -> int:
        return self.tokens_before - self.tokens_after

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class LayerResult:
    """A layer's output: the new entries (never the input list mutated) and its report, or None
    when it did nothing."""
    entries: list[Entry]
    report: CompactionReport | None = None
