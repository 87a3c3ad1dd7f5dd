"""History entries: an API message plus metadata the API never sees.

Entries are treated as immutable: layers build new entries with `with_content`/`replace` so
the per-entry token estimate, cached on first use, can never go stale.
"""
from __future__ import annotations

import uuid as _uuid
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Iterable

from compaction import clock
from compaction.estimate import MESSAGE_CATEGORIES, categorize_message, estimate_message

KINDS = ("message", "compact_boundary", "summary", "attachment", "snip_marker")

# Kinds that are bookkeeping only and never part of a request.
NOT_SENT = frozenset({"compact_boundary"})


def new_uuid() -> str:
    return _uuid.uuid4().hex


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content)


@dataclass(frozen=True, eq=False)
class Entry:
    message: dict[str, Any]
    kind: str = "message"
    uuid: str = field(default_factory=new_uuid)
    timestamp: float = field(default_factory=clock.now)
    response_id: str | None = None
    usage: dict[str, Any] | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown entry kind {self.kind!r}; expected one of {KINDS}")
        if isinstance(self.message.get("content"), str):
            object.__setattr__(self, "message", {**self.message, "content": _blocks(self.message["content"])})

    @property
    def role(self) -> str:
        role: str = self.message["role"]
        return role

    @property
    def content(self) -> list[dict[str, Any]]:
        content: list[dict[str, Any]] = self.message["content"]   # always blocks (see __post_init__)
        return content

    @property
    def sent(self) -> bool:
        return self.kind not in NOT_SENT

    @cached_property
    def tokens(self) -> int:
        return 0 if not self.sent else estimate_message(self.message)

    @cached_property
    def category_tokens(self) -> dict[str, int]:
        if not self.sent:
            return dict.fromkeys(MESSAGE_CATEGORIES, 0)
        return categorize_message(self.message, self.kind, self.tokens)

    def tool_use_ids(self) -> list[str]:
        return [b["id"] for b in self.content if b.get("type") == "tool_use"]

    def tool_result_ids(self) -> list[str]:
        return [b["tool_use_id"] for b in self.content if b.get("type") == "tool_result"]

    def text(self) -> str:
        return "\n".join(b.get("text", "") for b in self.content if b.get("type") == "text")

    def with_content(self, content: list[dict[str, Any]], **meta: Any) -> "Entry":
        """Same entry (same uuid) with new content; metadata keys given are merged in."""
        return replace(self, message={**self.message, "content": content}, meta={**self.meta, **meta})

    def with_meta(self, **meta: Any) -> "Entry":
        return replace(self, meta={**self.meta, **meta})

    def to_dict(self) -> dict[str, Any]:
        d = {"uuid": self.uuid, "kind": self.kind, "timestamp": self.timestamp, "message": self.message}
        if self.response_id is not None:
            d["response_id"] = self.response_id
        if self.usage is not None:
            d["usage"] = self.usage
        if self.meta:
            d["meta"] = self.meta
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Entry":
        return cls(
            message=d["message"],
            kind=d.get("kind", "message"),
            uuid=d["uuid"],
            timestamp=d.get("timestamp", 0.0),
            response_id=d.get("response_id"),
            usage=d.get("usage"),
            meta=d.get("meta") or {},
        )


def user(content: str | list[dict[str, Any]], kind: str = "message", **meta: Any) -> Entry:
    return Entry({"role": "user", "content": _blocks(content)}, kind=kind, meta=meta)


def assistant(content: str | list[dict[str, Any]], response_id: str | None = None, usage: dict[str, Any] | None = None,
              **meta: Any) -> Entry:
    return Entry({"role": "assistant", "content": _blocks(content)}, response_id=response_id, usage=usage, meta=meta)


def tool_result_block(tool_use_id: str, content: str | list[dict[str, Any]], is_error: bool = False) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}
    if is_error:
        block["is_error"] = True
    return block


def boundary(trigger: str, tokens_before: int, tokens_after: int, transcript_path: str | None, layer: str) -> Entry:
    """A compact boundary: recorded in the history and the log, never sent to the API."""
    return Entry(
        {"role": "user", "content": [{"type": "text", "text": f"[compaction: {layer} ({trigger})]"}]},
        kind="compact_boundary",
        meta={"trigger": trigger, "layer": layer, "tokens_before": tokens_before,
              "tokens_after": tokens_after, "transcript_path": transcript_path},
    )


def project(entries: Iterable[Entry]) -> list[dict[str, Any]]:
    """The API request messages for these entries.

    Bookkeeping entries are dropped and adjacent messages of one role are merged (the API
    joins them anyway); in a merged user message tool results come first, as the API requires.
    """
    out: list[dict[str, Any]] = []
    for e in entries:
        if e.sent:
            append_message(out, e)
    return out


def append_message(out: list[dict[str, Any]], e: Entry) -> None:
    """Add one sent entry to a request being built, merging it into the previous message of the
    same role (tool results first in a merged user message)."""
    if out and out[-1]["role"] == e.role:
        content = out[-1]["content"] + e.content
        if e.role == "user":
            content = [b for b in content if b.get("type") == "tool_result"] + [
                b for b in content if b.get("type") != "tool_result"]
        out[-1] = {"role": e.role, "content": content}
    else:
        out.append(e.message)
