"""What a compaction changed in the working history, entry by entry, so the inspector can tell a
user what the agent no longer sees: the entries removed, the ones cleared in place, what was put
in their stead (summary, digests, re-attached files) and the tail kept verbatim, each with its
tokens. Computed by the loop from the history before and after it adopts a rewrite (the layers
report figures, the loop alone sees both lists); plain JSON so the session log keeps it with the
Compaction event and a resumed session can inspect it too.
"""
from __future__ import annotations

from compaction.entry import Entry

LIST_CAP = 200        # entries listed per part (the rest are counted)
PREVIEW_CHARS = 120   # one line saying what a removed or cleared entry was
TEXT_CHARS = 20_000   # the text of what was added (a summary is a few thousand tokens at most)


def _label(e: Entry) -> str:
    """A short, one-line description of an entry: its kind or role and the start of its text."""
    kinds = [str(b.get("type")) for b in e.content]
    if "tool_result" in kinds:
        what = "tool result"
    elif "tool_use" in kinds:
        names = [str(b.get("name", "?")) for b in e.content if b.get("type") == "tool_use"]
        what = "tool call " + ", ".join(names)
    elif e.kind != "message":
        what = e.kind.replace("_", " ")
    else:
        what = e.role
    text = " ".join((e.text() or _result_text(e)).split())
    return f"{what}: {text[:PREVIEW_CHARS]}" if text else what


def _result_text(e: Entry) -> str:
    out = []
    for b in e.content:
        c = b.get("content")
        if isinstance(c, str):
            out.append(c)
        elif isinstance(c, list):
            out += [x.get("text", "") for x in c if isinstance(x, dict)]
    return " ".join(out)


def compaction_parts(before: list[Entry], after: list[Entry], layers: list[str]) -> dict:
    """The difference between two working histories, by entry uuid: `removed` (uuid, label,
    tokens), `cleared` (uuid, label, tokens before, after: same entry, content rewritten), `added`
    (uuid, kind, tokens, text), `kept` (entries and tokens carried over unchanged) and the tokens of
    each part. `layers`: the layers whose reports this run produced (the diff is their sum)."""
    old = {e.uuid: e for e in before}
    new_ids = {e.uuid for e in after}
    removed = [e for e in before if e.uuid not in new_ids]
    cleared = [(old[e.uuid], e) for e in after if e.uuid in old and old[e.uuid] is not e
               and old[e.uuid].content != e.content]
    kept = [e for e in after if e.uuid in old and (old[e.uuid] is e or old[e.uuid].content == e.content)]
    added = [e for e in after if e.uuid not in old]
    return {
        "layers": list(layers),
        "removed": [[e.uuid, _label(e), e.tokens] for e in removed[:LIST_CAP]],
        "removed_count": len(removed),
        "removed_tokens": sum(e.tokens for e in removed),
        "cleared": [[b.uuid, _label(b), b.tokens, a.tokens] for b, a in cleared[:LIST_CAP]],
        "cleared_count": len(cleared),
        "cleared_tokens": [sum(b.tokens for b, _ in cleared), sum(a.tokens for _, a in cleared)],
        "added": [{"uuid": e.uuid, "kind": e.kind, "tokens": e.tokens,
                   "path": str(e.meta.get("path", "")) if e.kind == "attachment" else "",
                   "text": (e.text() or _result_text(e))[:TEXT_CHARS]} for e in added[:LIST_CAP]],
        "added_tokens": sum(e.tokens for e in added),
        "kept": [len(kept), sum(e.tokens for e in kept)],
    }
