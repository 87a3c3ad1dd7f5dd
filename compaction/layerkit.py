"""Helpers shared by the cheap layers (1–4) and `Pipeline.run_cheap`.

Why a module of its own: every layer needs the same three things — to touch only what is new
since its last run (a per-process scan mark), to rewrite entries while keeping the usage anchor
truthful, and to know which tool produced a result — and the pipeline needs a projection that
costs O(new entries) per turn.
"""
from __future__ import annotations

from typing import Any, Sequence

from compaction.entry import Entry, append_message
from compaction.accounting.tokens import Calibration, adjust_anchor, anchor_index, estimate_block, estimate_message

# ----- per-process scratch ---------------------------------------------------------------------


def runtime(state: Any, layer: str) -> dict[str, Any]:
    """Scratch space for `layer` that lives on the PipelineState object but outside `layers`, so it
    is never serialised: it describes list objects of this process (scan marks, caches). After a
    resume it is empty and each layer rescans once."""
    rt: dict[str, dict[str, Any]] = state.__dict__.setdefault("_runtime", {})
    return rt.setdefault(layer, {})


def mark_get(rt: dict[str, Any], key: str, entries: Sequence[Entry]) -> int:
    """Index of the last entry processed by an earlier run on this same list lineage, or -1.

    The mark holds the entry object itself: if that exact object is still at that index, the
    caller passed our previous output plus appended entries, so everything up to it is done."""
    m = rt.get(key)
    if not m:
        return -1
    i, obj = m
    return i if i < len(entries) and entries[i] is obj else -1


def mark_set(rt: dict[str, Any], key: str, entries: Sequence[Entry]) -> None:
    rt[key] = (len(entries) - 1, entries[-1]) if entries else None


# ----- rewriting with a truthful anchor ----------------------------------------------------------


def rewrite(entries: list[Entry], changes: dict[int, Entry], sent_delta: dict[int, int],
            state: Any = None) -> list[Entry]:
    """A new list with `changes` applied. `sent_delta[i]` is the token change of entry i against
    what was actually sent before; the part at or before the usage anchor shifts the anchor
    (`adjust_anchor`) so `count_tokens` drops by exactly what the estimates say was freed.
    With the pipeline `state`, entries that context collapse hid from the anchor's request (see
    `hidden_from_anchor`) were never in its usage, so their changes do not shift it."""
    out = list(entries)
    for i, e in changes.items():
        out[i] = e
    a = anchor_index(out)
    if a is None:
        return out
    hidden = hidden_from_anchor(out, state, a) if state is not None else ()
    delta = sum(d for i, d in sent_delta.items() if i <= a and not any(x <= i < y for x, y in hidden))
    return adjust_anchor(out, delta, upto=0) if delta else out


def hidden_from_anchor(entries: Sequence[Entry], state: Any, anchor: int | None = None) -> list[tuple[int, int]]:
    """Index ranges (start, end exclusive) of the entries that context collapse replaced by a
    digest in the request the usage anchor answered: spans of the collapse store (state
    `layers["collapse"]["spans"]`) committed before that response and not holding the anchor.
    Spans committed since (their `anchor` is still the current one) are not included: the anchor
    counted them in full and collapse shifts it for them from the current estimates."""
    spans = state.layers.get("collapse", {}).get("spans") if state is not None else None
    if not spans:
        return []
    a = anchor_index(entries) if anchor is None else anchor
    if a is None:
        return []
    anchor_uuid = entries[a].uuid
    return [(h, e) for sp, (h, e) in _span_ranges(entries, spans)
            if sp.get("anchor") != anchor_uuid and not h <= a < e]


def held_by_anchor(entries: Sequence[Entry], state: Any, lo: int, hi: int, cal: Calibration | None = None) -> float:
    """Estimated tokens the usage anchor's request held for entries[lo:hi], once they are gone and
    any collapse span they cut into is shown in full again: an entry a span hid from that request
    counts as its digest there, not in full. What removing those entries frees from the anchor
    (snip): without it, snipping collapsed rounds took their whole size off a count that held
    only their digests (issue 24: 7,956 counted, 22,875 sent). In units of `cal`'s ratio."""
    size = (cal or Calibration()).weighted
    held = size(entries[lo:hi])
    spans = state.layers.get("collapse", {}).get("spans") if state is not None else None
    a = anchor_index(entries)
    if not spans or a is None:
        return held
    anchor_uuid = entries[a].uuid
    for sp, (x, y) in _span_ranges(entries, spans):
        if sp.get("anchor") == anchor_uuid or x <= a < y or y <= lo or x >= hi:
            continue   # counted in full by the anchor, or untouched
        inside = size(entries[max(x, lo):min(y, hi)])
        kept = size(entries[x:y]) - inside   # shown in full once the span is cut
        digest = estimate_message({"role": "user", "content": [{"type": "text", "text": str(sp.get("digest", ""))}]})
        held += digest - inside - kept
    return held


def _span_ranges(entries: Sequence[Entry], spans: list[dict[str, Any]]) -> list[tuple[dict[str, Any], tuple[int, int]]]:
    """Each committed span still in `entries` with its index range (start, end exclusive): from
    its stored index hint when that still holds (O(1)), else from one index of the entries."""
    index: dict[str, int] | None = None
    out: list[tuple[dict[str, Any], tuple[int, int]]] = []
    for sp in spans:
        h, n = sp.get("hint", -1), sp.get("n", 0)
        if not (0 <= h and n > 0 and h + n <= len(entries) and entries[h].uuid == sp.get("first")
                and entries[h + n - 1].uuid == sp.get("last")):
            if index is None:
                index = {e.uuid: i for i, e in enumerate(entries)}
            x, y = index.get(sp.get("first", "")), index.get(sp.get("last", ""))
            if x is None or y is None or y < x:
                continue
            h, n = x, y - x + 1
        out.append((sp, (h, h + n)))
    return out


def collapsed_ranges(entries: Sequence[Entry], state: Any) -> list[tuple[int, int]]:
    """Index ranges (start, end exclusive) of every span the collapse store has committed and that
    is still in `entries`: what the next request shows as digests instead. O(spans) when the
    stored index hints hold; one index of the entries otherwise."""
    spans = state.layers.get("collapse", {}).get("spans") if state is not None else None
    if not spans:
        return []
    return [r for _sp, r in _span_ranges(entries, spans)]


# ----- tool names ------------------------------------------------------------------------------


def tool_uses_before(entries: Sequence[Entry], i: int) -> dict[str, dict[str, Any]]:
    """The tool_use blocks (by id) of the assistant entries right before entry i: the calls that
    the tool_results in entry i answer. Walks back over at most one assistant run."""
    out: dict[str, dict[str, Any]] = {}
    seen_assistant = False
    k = i - 1
    while k >= 0:
        e = entries[k]
        if e.sent:
            if e.role == "assistant":
                seen_assistant = True
                for b in e.content:
                    if b.get("type") == "tool_use" and isinstance(b.get("id"), str):
                        out[b["id"]] = b
            elif seen_assistant:
                break
        k -= 1
    return out


def has_tool_results(e: Entry) -> bool:
    return e.role == "user" and e.sent and any(b.get("type") == "tool_result" for b in e.content)


def result_text(block: dict[str, Any]) -> str | None:
    """The text of a tool_result, or None when it holds images/documents (those are not text)."""
    c = block.get("content", "")
    if isinstance(c, str):
        return c
    if all(isinstance(x, dict) and x.get("type") == "text" for x in c):
        return "".join(x.get("text", "") for x in c)
    return None


def result_chars(block: dict[str, Any]) -> int:
    c = block.get("content", "")
    if isinstance(c, str):
        return len(c)
    return sum(len(x.get("text", "")) if x.get("type") == "text" else 10_000 for x in c if isinstance(x, dict))


def block_tokens(block: dict[str, Any]) -> int:
    return estimate_block(block)


# ----- recent tail of rounds ---------------------------------------------------------------------


def tail_round(entries: Sequence[Entry], starts: list[int], keep_tokens: int, keep_rounds: int) -> int:
    """Index (into `starts`) of the first round of the protected recent tail: the fewest latest
    rounds holding at least `keep_tokens` estimated tokens and `keep_rounds` rounds, and always the
    round with the usage anchor (so rewrites before it can be accounted on the anchor)."""
    anchor = anchor_index(entries)
    acc = 0
    r = len(starts) - 1
    end = len(entries)
    while r >= 1:
        acc += sum(e.tokens for e in entries[starts[r]:end])
        n = len(starts) - r
        if acc >= keep_tokens and n >= keep_rounds and (anchor is None or starts[r] <= anchor):
            return r
        end = starts[r]
        r -= 1
    return 1


# ----- incremental projection ------------------------------------------------------------------


class Projector:
    """`entry.project` with memory: a turn that appends k entries costs O(k) Python work.

    It keeps the previous view and, per entry, the message count and the last message after it,
    so a view sharing a prefix (by identity) with the previous one only folds the rest.
    Fast path: handed the same list object again, longer and with the same object where the old
    end was, the list is taken to have grown by appends (the loop's contract: it appends to its
    history or swaps in a new list, never edits one in place). Any other list gets a C-level
    identity comparison of the prefix. The result is a fresh list the caller owns."""

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self.msgs: list[dict[str, Any]] = []
        self.ends: list[int] = []
        self.lasts: list[dict[str, Any] | None] = []
        self.src: Sequence[Entry] | None = None

    def _common_prefix(self, view: Sequence[Entry]) -> int:
        prev = self.entries
        n = len(prev)
        if view is self.src and len(view) >= n and (n == 0 or view[n - 1] is prev[-1]):
            return n
        m = min(n, len(view))
        if m == 0:
            return 0
        if view[m - 1] is prev[m - 1] and (view[:m] == prev if m == n else view[:m] == prev[:m]):
            return m
        lo, hi = 0, m  # largest k with view[:k] == prev[:k]; O(m log m) C-level compares
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if view[:mid] == prev[:mid]:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def project(self, view: Sequence[Entry]) -> list[dict[str, Any]]:
        k = self._common_prefix(view)
        if k < len(self.entries):
            n = self.ends[k - 1] if k else 0
            del self.entries[k:], self.ends[k:], self.lasts[k:], self.msgs[n:]
            if n:
                last = self.lasts[k - 1]
                assert last is not None   # n > 0: a message ended at entry k - 1
                self.msgs[n - 1] = last
        out = self.msgs
        for e in view[k:]:
            if e.sent:
                append_message(out, e)
            self.entries.append(e)
            self.ends.append(len(out))
            self.lasts.append(out[-1] if out else None)
        self.src = view
        return list(out)
