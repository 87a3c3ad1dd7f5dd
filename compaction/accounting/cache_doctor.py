"""Why a request read less from the prompt cache than the request before it left there.

Each request leaves its whole prompt cached at its last breakpoint, so the next one should read
about that much. When it reads short (by more than `tolerance`), the doctor says where the prefix
changed and, when it is known, why:

- where: the first part of the prompt, in the API's cache order, that is not what the previous
  request sent — `tools`, `system`, `message N` (1-based) — or `tools or system` when only their
  total is known (a Claude Code log records neither). Nothing changed (`""`): the entry was gone,
  or belonged to another model.
- why, the first that fits: `model switch` (each model has its own cache), `TTL expired` (longer
  since the previous request than the TTL it wrote under), `tool list changed`, `compaction
  rewrite` (a compaction since the previous request rewrote the messages); None when none does.

A `PromptShape` is what both sides can know of a request: a digest and a size per part. ctxtui
digests what it sends; a Claude Code log gives message keys and sizes, and the head as one part.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Sequence

from compaction.accounting.cache_model import ttl_seconds

MODEL_SWITCH = "model switch"
TTL_EXPIRED = "TTL expired"
TOOLS_CHANGED = "tool list changed"
COMPACTION_REWRITE = "compaction rewrite"
WHYS = (MODEL_SWITCH, TTL_EXPIRED, TOOLS_CHANGED, COMPACTION_REWRITE)
HEAD = "tools or system"         # the part a log knows only as a total


def tolerance(expected: int) -> int:
    """How far below the expected read a read may fall before it is short: the API's smallest
    cacheable prefix, or a tenth of the expected read."""
    return max(1_024, expected // 10)


def digest(obj: Any) -> str:
    """A short digest of a request part as sent, cache markers left out (they move every turn)."""
    text = obj if isinstance(obj, str) else json.dumps(unmarked(obj), sort_keys=True, separators=(",", ":"),
                                                       default=str)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


def unmarked(obj: Any) -> Any:
    """`obj` without cache_control markers: moving a breakpoint does not change the prefix."""
    if isinstance(obj, dict):
        return {k: unmarked(v) for k, v in obj.items() if k != "cache_control"}
    if isinstance(obj, list):
        return [unmarked(v) for v in obj]
    return obj


@dataclass(frozen=True)
class PromptShape:
    """One request as the cache sees it. `head`: (name, digest, tokens) of the parts before the
    messages (`tools`, `system`, or one `tools or system`); `messages`: a digest per message and
    `sizes` its tokens; `total` the prompt's tokens as the server counted them (0 until known);
    `compacted`: a compaction rewrote the history since the previous request. A shape with neither
    head nor messages knows only its figures (a resumed session's last request)."""
    model: str
    at: float
    ttl: str
    head: tuple[tuple[str, str, int], ...]
    messages: tuple[str, ...]
    sizes: tuple[int, ...] = field(default=(), compare=False)
    total: int = 0
    compacted: bool = False


@dataclass(frozen=True)
class CacheMiss:
    """A request that read short: its number in the session (1-based), what it read, what the
    previous request left, where the prefix changed and why (module doc)."""
    request: int
    read: int
    expected: int
    where: str
    why: str | None
    model: str = ""

    @property
    def short(self) -> int:
        return max(0, self.expected - self.read)

    def to_dict(self) -> dict[str, Any]:
        return {"request": self.request, "read": self.read, "expected": self.expected, "short": self.short,
                "where": self.where or None, "why": self.why, "model": self.model or None}

    def reason(self) -> str:
        """Where and why in words: "changed at message 12 (compaction rewrite)"."""
        if self.where:
            return f"changed at {self.where}" + (f" ({self.why})" if self.why else "")
        if self.why == COMPACTION_REWRITE:
            return "a compaction rewrote the messages"
        return "the prefix did not change" + (f" ({self.why})" if self.why else " (the entry was gone)")

    def text(self) -> str:
        """One line: "request 7 read 1,200 of 45,000 cached tokens: changed at message 12 (compaction rewrite)"."""
        return f"request {self.request} read {self.read:,} of {self.expected:,} cached tokens: {self.reason()}"


def _position(shape: PromptShape, read: int) -> str:
    """The part the read stopped in, by sizes (what a log can say when its content shows no change)."""
    at = 0
    for name, _d, tokens in shape.head:
        at += tokens
        if read < at:
            return name
    for i, tokens in enumerate(shape.sizes):
        at += tokens
        if read < at:
            return f"message {i + 1}"
    return ""


def changed_at(previous: PromptShape, current: PromptShape) -> str:
    """The first part of `current` that is not `previous`'s (module doc), "" when it extends it."""
    for (name, before, _t), (now_name, now, _n) in zip(previous.head, current.head):
        if name != now_name or before != now:
            return now_name
    if len(previous.head) != len(current.head):
        return current.head[0][0] if current.head else "messages"
    for i, (before, now) in enumerate(zip(previous.messages, current.messages)):
        if before != now:
            return f"message {i + 1}"
    if len(current.messages) < len(previous.messages):
        return f"message {len(current.messages) + 1}"
    return ""


def diagnose(request: int, previous: PromptShape | None, current: PromptShape, read: int) -> CacheMiss | None:
    """The miss of `current` (request number `request`), which read `read` tokens from the cache;
    None when it read about what `previous` left (or there was no previous request)."""
    if previous is None or previous.total <= 0:
        return None
    expected = previous.total
    if expected - read <= tolerance(expected):
        return None
    known = bool(previous.head or previous.messages)    # a shape restored from a log has only its figures
    where = changed_at(previous, current) if known else ""
    if known and not where:
        where = _position(current, read) if read > 0 and any(n == HEAD for n, _d, _t in current.head) else ""
    why: str | None = None
    if previous.model != current.model:
        why = MODEL_SWITCH
    elif current.at - previous.at > ttl_seconds(previous.ttl):
        why = TTL_EXPIRED
    elif where == "tools":
        why = TOOLS_CHANGED
    elif current.compacted and (where.startswith("message") or not known):
        why = COMPACTION_REWRITE
    if not known and why is None:
        return None                  # nothing to say of a prefix whose content is not known
    return CacheMiss(request, read, expected, where, why, current.model)


def shape_of(*, model: str, at: float, ttl: str, tools: Sequence[dict[str, Any]], system: Any,
             messages: Sequence[dict[str, Any]], sizes: Sequence[int], head_tokens: tuple[int, int],
             compacted: bool, digests: Sequence[str] | None = None) -> PromptShape:
    """The shape of a request ctxtui sends: its tools, system prompt and messages digested as sent
    (`digests`: the messages' digests when the caller already has them)."""
    head = (("tools", digest(list(tools)), head_tokens[0]), ("system", digest(system or ""), head_tokens[1]))
    return PromptShape(model, at, ttl, head, tuple(digests if digests is not None else map(digest, messages)),
                       tuple(sizes), compacted=compacted)
