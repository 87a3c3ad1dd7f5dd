"""`/rewind`: back to an earlier prompt of the user's. The working history is cut to what it was
just before that prompt was sent and the prompt is handed back to be edited or sent again; the
session log keeps everything (the cut is a history record, as a compaction's rewrite is).

Only prompts still in the working history can be rewound to: one a compaction summarised is gone
from it (the transcript browser still shows it)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from compaction.entry import Entry

from agent_core.loop.shell_input import PREFIX, shell_of

PREVIEW_CHARS = 200


@dataclass(frozen=True)
class RewindPoint:
    index: int          # the prompt's place in the working history: the history is cut to entries[:index]
    number: int         # 1 for the oldest prompt still in the history
    text: str           # the prompt as typed (its text blocks)
    later_entries: int  # how many entries the rewind drops


def prompt_text(entry: Entry) -> str | None:
    """The text a user typed, for an entry that is a prompt (not a tool result, not a summary)."""
    if entry.kind != "message" or entry.role != "user":
        return None
    blocks = entry.content
    if any(b.get("type") == "tool_result" for b in blocks):
        return None
    shell = shell_of(entry)
    if shell is not None:
        return PREFIX + shell[0]          # a `!command`: given back as typed, to run again
    texts = [str(b.get("text", "")) for b in blocks if b.get("type") == "text"]
    return texts[0] if texts else None


def rewind_points(entries: Sequence[Entry]) -> list[RewindPoint]:
    """Every prompt of the working history, oldest first."""
    out: list[RewindPoint] = []
    for i, e in enumerate(entries):
        text = prompt_text(e)
        if text is not None:
            out.append(RewindPoint(i, len(out) + 1, text, len(entries) - i))
    return out
