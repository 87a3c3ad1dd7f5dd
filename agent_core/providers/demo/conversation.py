"""Reading a Messages-API request the way the demo needs it: the current prompt, this turn's tool
calls with their results, and what earlier turns already read.

The request may have been rewritten by compaction (placeholders, summaries, re-injected files,
merged user messages), so prompts are recognised by shape, not position alone.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

SUMMARY_MARKERS = ("<summary>", "primary request and intent", "continued from a previous conversation",
                   "session is being continued", "continues an earlier conversation", "# session notes")


# Texts the loop or the engine put in user turns: re-attached files, persisted outputs, reminders.
_NOT_TYPED = ("<persisted-output>", "<file path=", "</file>", "Re-attached after compaction", "<system-reminder>")


def blocks(message: dict) -> list[dict]:
    c = message.get("content")
    if isinstance(c, str):
        return [{"type": "text", "text": c}]
    return [b for b in (c or []) if isinstance(b, dict)]


def result_text(block: dict) -> str:
    c = block.get("content", "")
    if isinstance(c, str):
        return c
    return "\n".join(x.get("text", "") for x in c if isinstance(x, dict) and x.get("type") == "text")


def canon(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def looks_like_summary(text: str) -> bool:
    low = text.lower()
    return any(m in low for m in SUMMARY_MARKERS)


def is_prompt_text(text: str) -> bool:
    """A text block a person typed, as opposed to a summary, marker, attachment or reminder."""
    s = text.strip()
    if not s or s[0] in "<[" or looks_like_summary(s) or any(t in s for t in _NOT_TYPED):
        return False
    return s.count("\n") <= 40


def norm_path(p: object) -> str:
    s = str(p or "").strip()
    while s.startswith("./"):
        s = s[2:]
    return s


@dataclass
class Call:
    id: str
    name: str
    input: dict
    round: int
    result: str | None = None     # None: not answered (yet)
    is_error: bool = False

    @property
    def ok(self) -> bool:
        return self.result is not None and not self.is_error


@dataclass
class Turn:
    """The request seen from the current prompt onwards."""
    prompt: str
    prompt_index: int
    rounds: int                                   # assistant messages since the prompt
    calls: list[Call] = field(default_factory=list)
    read_before: frozenset[str] = frozenset()     # read_file paths asked before this turn
    after_compaction: bool = False                # compacted mid-turn (the summary quotes the prompt)
    last_message_role: str = "user"

    def last_round(self) -> list[Call]:
        return [c for c in self.calls if c.round == self.rounds - 1]


def prompt_position(messages: list[dict]) -> tuple[int, str]:
    """Index and text of the latest prompt; falls back to the latest user text of any kind."""
    fallback: tuple[int, str] | None = None
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if m.get("role") != "user":
            continue
        bs = blocks(m)
        if any(b.get("type") == "tool_result" for b in bs):
            continue
        texts = [b.get("text", "") for b in bs if b.get("type") == "text"]
        for t in reversed(texts):
            if is_prompt_text(t):
                return i, t.strip()
        if fallback is None and any(t.strip() for t in texts):
            fallback = (i, next(t for t in reversed(texts) if t.strip()).strip()[:2000])
    return fallback or (0, "")


def tool_calls(messages: list[dict], start: int = 0) -> list[Call]:
    """Every tool_use from `start` on, with its result when the next message answers it."""
    calls: list[Call] = []
    by_id: dict[str, Call] = {}
    rnd = -1
    for m in messages[start:]:
        if m.get("role") == "assistant":
            rnd += 1
            for b in blocks(m):
                if b.get("type") == "tool_use":
                    c = Call(str(b.get("id")), str(b.get("name")), dict(b.get("input") or {}), rnd)
                    calls.append(c)
                    by_id[c.id] = c
        else:
            for b in blocks(m):
                if b.get("type") == "tool_result" and b.get("tool_use_id") in by_id:
                    c = by_id[b["tool_use_id"]]
                    c.result = result_text(b)
                    c.is_error = bool(b.get("is_error"))
    return calls


def parse(messages: list[dict]) -> Turn:
    idx, prompt = prompt_position(messages)
    before = {norm_path(c.input.get("path")) for c in tool_calls(messages[:idx])
              if c.name == "read_file" and c.input.get("path")}
    after = messages[idx + 1:]
    # Compacted mid-turn: a summary arrived with the prompt and already quotes it (a prompt sent
    # after a compaction is not in the summary yet).
    probe = " ".join(prompt.split())[:60]
    summary = bool(messages and probe) and any(
        looks_like_summary(b.get("text", "")) and probe in " ".join(b.get("text", "").split())
        for b in blocks(messages[idx]) if b.get("type") == "text")
    return Turn(prompt=prompt, prompt_index=idx, rounds=sum(1 for m in after if m.get("role") == "assistant"),
                calls=tool_calls(messages, idx + 1), read_before=frozenset(before), after_compaction=summary,
                last_message_role=messages[-1].get("role", "user") if messages else "user")
