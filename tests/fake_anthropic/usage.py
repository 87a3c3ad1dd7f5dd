"""Token counts and a simulated prompt cache for the fake server.

Counts use the project's own estimator (compaction.accounting.tokens) by default, so usage the fake
server reports agrees with what the loop estimates; a `tokenizer` (e.g. `chars_tokenizer(3.5)`)
makes it a server that counts differently, as a real one does. The request is linearised in the API's cache order
(tools, system, messages) into segments, one per tool / system block / content block. A segment
carrying `cache_control` is a breakpoint: the prefix up to it is written to the cache. On the
next request the longest prefix already cached (up to the last breakpoint) is a cache read, the
rest up to the last breakpoint a cache write, and whatever follows plain input — like the API.
"""
from __future__ import annotations

import hashlib
import json
import math
import threading
from dataclasses import dataclass
from typing import Any, Callable

from compaction.estimate import estimate_tools
from compaction.accounting.tokens import MESSAGE_OVERHEAD, estimate_block, estimate_text


@dataclass(frozen=True)
class Segment:
    key: str          # canonical JSON without cache_control
    tokens: int
    ttl: str | None   # "5m" | "1h" when this segment is a breakpoint, else None


def _strip_cc(obj):
    if isinstance(obj, dict):
        return {k: _strip_cc(v) for k, v in obj.items() if k != "cache_control"}
    if isinstance(obj, list):
        return [_strip_cc(v) for v in obj]
    return obj


def _ttl(obj) -> str | None:
    cc = obj.get("cache_control") if isinstance(obj, dict) else None
    if not isinstance(cc, dict):
        return None
    return "1h" if cc.get("ttl") == "1h" else "5m"


def _key(obj) -> str:
    return json.dumps(_strip_cc(obj), sort_keys=True, separators=(",", ":"))


# A tokenizer counts one segment of the request: (kind, the segment as sent) -> tokens, kind being
# "tool", "system", "message" (a message's first block, which carries the message's overhead) or
# "block". None: the project's own estimator (the default).
Tokenizer = Callable[[str, Any], int]


def chars_tokenizer(chars_per_token: float = 3.5, per_message: int = 3) -> Tokenizer:
    """A server that counts unlike ctxtui's estimator: every segment as its JSON, `chars_per_token`
    characters a token, plus `per_message` for each message's role and boundary (the strict
    independent server of issue 24 counts characters / 3.5)."""
    def count(kind: str, obj: Any) -> int:
        text = obj if isinstance(obj, str) else json.dumps(_strip_cc(obj), sort_keys=True, separators=(",", ":"))
        return math.ceil(len(text) / chars_per_token) + (per_message if kind == "message" else 0)
    return count


def _own(kind: str, obj: Any) -> int:
    if kind == "tool":
        return estimate_tools([obj])
    if kind == "system":
        return estimate_text(obj if isinstance(obj, str) else str(obj.get("text", "")))
    return estimate_block(obj) + (MESSAGE_OVERHEAD if kind == "message" else 0)


def segments(body: dict, tokenizer: Tokenizer | None = None) -> list[Segment]:
    tok = tokenizer or _own
    out: list[Segment] = []
    for tool in body.get("tools") or []:
        out.append(Segment("tool:" + _key(tool), tok("tool", _strip_cc(tool)), _ttl(tool)))
    system = body.get("system")
    if isinstance(system, str) and system:
        out.append(Segment("system:" + system, tok("system", system), None))
    elif isinstance(system, list):
        for b in system:
            out.append(Segment("system:" + _key(b), tok("system", b), _ttl(b)))
    for i, m in enumerate(body.get("messages") or []):
        content = m.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
        for j, b in enumerate(blocks):
            if not isinstance(b, dict):
                continue
            # the first block of a message carries the message's own overhead ("message")
            n = tok("message" if j == 0 else "block", b)
            # The role and the message boundary are part of the prefix identity.
            out.append(Segment(f"{m.get('role')}:{i}:{j}:" + _key(b), n, _ttl(b)))
    return out


def count_input(body: dict, tokenizer: Tokenizer | None = None) -> int:
    return sum(s.tokens for s in segments(body, tokenizer))


def count_output(content: list[dict], tokenizer: Tokenizer | None = None) -> int:
    tok = tokenizer or _own
    return max(1, sum(tok("block", b) for b in content))


@dataclass
class CacheUsage:
    input_tokens: int
    cache_creation_input_tokens: int
    cache_read_input_tokens: int
    ephemeral_5m_input_tokens: int
    ephemeral_1h_input_tokens: int

    @property
    def total(self) -> int:
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens


class PrefixCache:
    """Prefix hashes written at breakpoints, per model. `min_tokens` mimics the API's minimum
    cacheable length (0 by default so small test requests cache)."""

    def __init__(self, min_tokens: int = 0, tokenizer: Tokenizer | None = None) -> None:
        self.min_tokens = min_tokens
        self.tokenizer = tokenizer
        self._store: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()

    def clear(self) -> None:
        with self._lock:
            self._store.clear()

    def account(self, body: dict, *, write: bool = True) -> CacheUsage:
        segs = segments(body, self.tokenizer)
        model = str(body.get("model", ""))
        cum: list[int] = []
        hashes: list[str] = []
        h = hashlib.sha256()
        running = 0
        for s in segs:
            h.update(s.key.encode("utf-8", "surrogatepass"))
            h.update(b"\x00")
            running += s.tokens
            cum.append(running)
            hashes.append(h.hexdigest())
        total = running
        bps = [i for i, s in enumerate(segs) if s.ttl is not None and cum[i] >= self.min_tokens]
        if not bps:
            return CacheUsage(total, 0, 0, 0, 0)
        last = bps[-1]
        with self._lock:
            hit = next((i for i in range(last, -1, -1) if (model, hashes[i]) in self._store), -1)
            if write:
                for i in bps:
                    self._store[(model, hashes[i])] = cum[i]
        read = cum[hit] if hit >= 0 else 0
        creation = cum[last] - read
        # Split the written span by the TTL of the breakpoint that covers each segment.
        split = {"5m": 0, "1h": 0}
        for i in range(hit + 1, last + 1):
            cover = next(b for b in bps if b >= i)
            split[segs[cover].ttl or "5m"] += segs[i].tokens
        return CacheUsage(total - cum[last], creation, read, split["5m"], split["1h"])
