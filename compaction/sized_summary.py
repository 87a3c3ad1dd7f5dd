"""A summary of a chosen size, written without a model: what replay and a compaction preview hand
the LLM stage in place of a model, so it builds the history it would build and the count after it
is the one a summary of that size gives."""
from __future__ import annotations

from typing import Any

from compaction.summarizer import SummaryResult

FILLER = "This summary is sized, not written: replay calls no model. "


class SizedSummarizer:
    """The `Summarizer` the LLM stage is handed: no model, a summary of the sized length holding
    what Claude Code's summary prompt asks a summary to keep and replay can know without a model
    — every user message ("All user messages", newest kept first when they do not all fit) and
    the files the conversation touched ("Files and code sections": paths, not contents) — then
    filler up to the size."""

    def __init__(self, tokens: int, filler: str = FILLER, model: str = "replay") -> None:
        self.tokens = tokens
        self.filler = filler
        self.model = model
        self.calls: list[int] = []       # the summary prompt's size, per call

    async def summarize(self, messages: list[dict[str, Any]], **_: Any) -> SummaryResult:
        last = messages[-1]["content"] if messages else []
        prompt = next((b.get("text", "") for b in reversed(last) if b.get("type") == "text"), "")
        self.calls.append(max(1, len(prompt) // 4))
        return SummaryResult(text=sized_summary(messages[:-1], self.tokens * 4, self.filler), usage={},
                             model=self.model)


def sized_summary(messages: list[dict[str, Any]], chars: int, filler: str = FILLER) -> str:
    """The summary text for `messages` (the conversation, without the summary prompt), `chars` long,
    padded with `filler`."""
    prompts: list[str] = []
    paths: dict[str, None] = {}
    for m in messages:
        content = m.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for b in blocks:
            if not isinstance(b, dict):
                continue
            text = str(b.get("text", "")) if b.get("type") == "text" else ""
            if m.get("role") == "user" and text.strip() and filler not in text and "<file path=" not in text:
                prompts.append(" ".join(text.split()))     # not an earlier sized summary, not a re-attached file
            elif b.get("type") == "tool_use" and isinstance(args := b.get("input"), dict):
                path = args.get("path") or args.get("file_path")
                if isinstance(path, str) and path:
                    paths[path] = None
    files = "Files and code sections:\n" + "".join(f"- {p}\n" for p in paths)
    kept: list[str] = []
    room = chars - len(files) - 40
    for p in reversed(prompts):              # the newest first, when they do not all fit
        line = f"- {p}\n"
        if len(line) > room:
            break
        kept.append(line)
        room -= len(line)
    text = "All user messages:\n" + "".join(reversed(kept)) + files
    if len(text) >= chars:
        return text[:chars]
    return text + (filler * ((chars - len(text)) // len(filler) + 1))[: chars - len(text)]
