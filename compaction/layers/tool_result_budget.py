"""Layer 1, tool-result budget (CC `applyToolResultBudget`).

A tool_result over `tool_result_max_chars`, or the largest results of a user message whose
results add up to over `message_results_max_chars`, is written to
`<session_dir>/tool-results/<tool_use_id>.txt` (0600, atomic) and replaced by a preview inside
`<persisted-output>` naming the path and the original size. Without a session folder the result
is truncated with a note instead. A self-bounded tool (read_file, capped by the factory at the
same per-result share of the window) is exempt from the first limit but not from the second: many
parallel reads in one message are bounded like any other results.

Prompt-cache stability: the decision for a tool_use_id (persist or keep) is frozen the first time
it is seen. State: `replaced` maps tool_use_id -> {text, path, chars} with the exact replacement
text, so re-applying it — next turn, or to a history rebuilt with the original content on
resume — is byte-identical; `seen_upto` is the uuid of the newest entry decided, so results up to
it that are not in `replaced` stay kept even if the limits change (the state stays small: it grows
with persisted results only).

Trust: a stored path is used only if it is exactly this session's canonical path for that id and
resolves inside the session folder with no symlink. Otherwise it is never read or written: if the
original content is at hand the result is re-persisted to the canonical path (a new decision);
if not, the stored text is left as it is.

Cost: a per-process scan mark means a turn looks only at entries added since the last run; a
resumed history is scanned once. That full scan also forgets the decisions for results that are
no longer in the history (`forget_gone`), so the state holds only what the history still refers to.
"""
from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Any

from compaction.entry import Entry
from compaction.layerkit import (block_tokens, has_tool_results, mark_get, mark_set, result_text, rewrite, runtime,
                       tool_uses_before)
from compaction.accounting.budget import REFERENCE_WINDOW
from compaction.layer_context import LayerContext, PipelineConfig
from compaction.report import CompactionReport, LayerResult
from compaction.accounting.tokens import count_tokens
from compaction.transcript import atomic_write_text, ensure_private_dir

NAME = "tool_result_budget"
FOLDER = "tool-results"
_SAFE_ID = re.compile(r"^[A-Za-z0-9_-]{1,128}$")


def limits(ctx: LayerContext) -> tuple[int, int]:
    """Characters allowed per result and per message. CC's 50,000 / 200,000 are for a 200,000
    window; a smaller window gets the same share of itself (like the thresholds in budget.py),
    so one result can never fill a small window on its own."""
    cfg = ctx.config
    scale = min(1.0, ctx.budget.context_window / REFERENCE_WINDOW)
    return int(cfg.tool_result_max_chars * scale), int(cfg.message_results_max_chars * scale)


def per_result_chars(config: PipelineConfig) -> int:
    """Characters one tool result may hold in this configuration's window (the first of `limits`):
    what a self-bounded tool (read_file) is given as its own cap, so it is bounded like the rest."""
    return int(config.tool_result_max_chars * min(1.0, config.budget.context_window / REFERENCE_WINDOW))


def file_name(tool_use_id: str) -> str:
    """The id itself when it is a plain token; otherwise a hash, so an id can never name a path."""
    if _SAFE_ID.match(tool_use_id):
        return f"{tool_use_id}.txt"
    return f"id-{hashlib.sha256(tool_use_id.encode()).hexdigest()[:32]}.txt"


def canonical_path(session_dir: Path, tool_use_id: str) -> Path:
    return Path(os.path.abspath(session_dir)) / FOLDER / file_name(tool_use_id)


def path_trusted(stored: str | None, session_dir: Path | None, tool_use_id: str) -> bool:
    """True only for this session's canonical path for the id, resolving inside the session folder
    with neither the folder nor the file a symlink."""
    if not stored or session_dir is None:
        return False
    canon = canonical_path(session_dir, tool_use_id)
    if stored != str(canon):
        return False
    return _folder_safe(session_dir) and not canon.is_symlink()


def _folder_safe(session_dir: Path) -> bool:
    folder = Path(os.path.abspath(session_dir)) / FOLDER
    if folder.is_symlink():
        return False
    root = os.path.realpath(session_dir)
    real = os.path.realpath(folder)
    return real == os.path.join(root, FOLDER)


def _preview(text: str, limit: int) -> str:
    """The first `limit` bytes (UTF-8, never half a character), cut at a line end when one is near."""
    raw = text.encode("utf-8")[:max(0, limit)]
    head = raw.decode("utf-8", errors="ignore")
    nl = head.rfind("\n")
    if nl >= len(head) // 2:
        head = head[:nl]
    return head


def persisted_text(path: str, chars: int, preview: str) -> str:
    return (f"<persisted-output>\nOutput too large ({chars:,} characters). The full output was saved to: {path}\n"
            f"Read that file (in parts) if you need more than this preview.\n\n"
            f"Preview (first {len(preview.encode('utf-8')):,} bytes):\n{preview}\n...\n</persisted-output>")


def truncated_text(chars: int, preview: str, why: str) -> str:
    return (f"<truncated-output>\nOutput too large ({chars:,} characters); {why}, so only the first "
            f"{len(preview.encode('utf-8')):,} bytes are kept.\n\n{preview}\n...\n</truncated-output>")


def _decide_persist(tid: str, block: dict[str, Any], text: str, ctx: LayerContext) -> dict[str, Any] | None:
    """Write the result (or fall back to truncation) and return the decision, or None when the
    replacement would not be smaller than the original (then the result is kept)."""
    preview = _preview(text, ctx.config.preview_bytes)
    path: str | None = None
    if ctx.session_dir is None:
        rep = truncated_text(len(text), preview, "there is no session folder to save it in")
    elif not _folder_safe(ctx.session_dir):
        rep = truncated_text(len(text), preview, "the session's tool-results folder is not safe to write")
    else:
        path = str(canonical_path(ctx.session_dir, tid))
        rep = persisted_text(path, len(text), preview)
    if block_tokens({**block, "content": rep}) >= block_tokens(block):
        return None
    if path is not None and not ctx.dry_run:
        try:
            ensure_private_dir(Path(path).parent)
            atomic_write_text(Path(path), text)
        except OSError as e:
            path = None
            rep = truncated_text(len(text), preview, f"saving it failed ({e.strerror or e})")
            if block_tokens({**block, "content": rep}) >= block_tokens(block):
                return None
    return {"text": rep, "path": path, "chars": len(text)}


def _restore_file(d: dict[str, Any], text: str) -> None:
    """A trusted path whose file went missing: write it again from the original (best effort)."""
    p = Path(d["path"])
    if not p.exists():
        try:
            atomic_write_text(p, text)
        except OSError:
            pass


def _process(entries: list[Entry], i: int, ctx: LayerContext, replaced: dict[str, Any],
             seen_before: bool) -> tuple[Entry | None, int, dict[str, Any]]:
    """Decide/re-apply for the results of entry i. `seen_before`: the entry was decided by an
    earlier run, so its results not in `replaced` are frozen as kept. Returns (new entry or None,
    token change against what was sent before, counters)."""
    e = entries[i]
    cfg = ctx.config
    uses = tool_uses_before(entries, i)
    blocks = list(e.content)
    counts = {"persisted": 0, "truncated": 0, "reapplied": 0, "repersisted": 0, "chars": 0}
    sent_delta = 0
    fresh: list[tuple[int, str, str]] = []  # (block index, id, text) of undecided, persistable results
    bounded: list[tuple[int, str, str]] = []  # the same for self-bounded tools (message total only)

    def put(j: int, d: dict[str, Any], sent_tokens: int) -> None:
        nonlocal sent_delta
        blocks[j] = {**blocks[j], "content": d["text"]}
        sent_delta += block_tokens(blocks[j]) - sent_tokens

    for j, b in enumerate(blocks):
        if b.get("type") != "tool_result" or not isinstance(b.get("tool_use_id"), str):
            continue
        tid = b["tool_use_id"]
        text = result_text(b)
        if tid in replaced:
            d = replaced[tid]
            original = d is not None and text is not None and len(text) == d["chars"] and text != d["text"]
            if d is None or text is None or not original:
                continue  # kept, already applied, or cleared since by a later layer
            if d.get("path") and not path_trusted(d["path"], ctx.session_dir, tid):
                nd = _decide_persist(tid, b, text, ctx)
                replaced[tid] = nd  # never the untrusted path again (None: kept from now on)
                if nd is not None:
                    put(j, nd, block_tokens({**b, "content": d["text"]}))
                    counts["repersisted"] += 1
                continue
            if d.get("path") and not ctx.dry_run:
                _restore_file(d, text)
            put(j, d, block_tokens({**b, "content": d["text"]}))  # the anchor already saw this text
            counts["reapplied"] += 1
            continue
        if seen_before:
            continue  # frozen: kept when first seen
        name = uses.get(tid, {}).get("name")
        if text is None:
            continue
        if name in cfg.self_bounded_tools:
            bounded.append((j, tid, text))   # capped by the tool itself, but counts towards the message
            continue
        fresh.append((j, tid, text))

    per_result, per_message = limits(ctx)
    decided: dict[str, dict[str, Any]] = {}
    for j, tid, text in fresh:
        if len(text) > per_result:
            d = _decide_persist(tid, blocks[j], text, ctx)
            if d is not None:
                decided[tid] = d
                put(j, d, block_tokens(blocks[j]))
    total = sum(len(result_text(b) or "") for b in blocks if b.get("type") == "tool_result")
    if total > per_message:
        # many parallel reads of a self-bounded tool can still overflow a message: bound them too
        rest = sorted((x for x in fresh + bounded if x[1] not in decided), key=lambda x: -len(x[2]))
        for j, tid, text in rest:
            if total <= per_message:
                break
            d = _decide_persist(tid, blocks[j], text, ctx)
            if d is not None:
                decided[tid] = d
                put(j, d, block_tokens(blocks[j]))
                total -= len(text) - len(d["text"])
    for tid, d in decided.items():
        replaced[tid] = d
        counts["persisted" if d["path"] else "truncated"] += 1
        counts["chars"] += d["chars"]
    if blocks == e.content:
        return None, 0, counts
    return e.with_content(blocks), sent_delta, counts


def forget_gone(replaced: dict[str, Any], entries: list[Entry]) -> None:
    """Drop the decisions for results no longer in the history (a compaction or snip removed
    them): they can never be applied again, and the state would grow with the session instead of
    with its history. Called on a full scan only (a resume, or a history that was rewritten), so
    it costs what that scan costs."""
    live = {b.get("tool_use_id") for e in entries if e.role == "user" for b in e.content
            if b.get("type") == "tool_result"}
    for tid in [t for t in replaced if t not in live]:
        del replaced[tid]


def apply(entries: list[Entry], ctx: LayerContext) -> LayerResult:
    if not ctx.config.tool_result_budget_enabled:
        return LayerResult(entries)
    st = ctx.state.of(NAME)
    replaced: dict[str, Any] = st.setdefault("replaced", {})
    rt = runtime(ctx.state, NAME)
    start = mark_get(rt, "scanned", entries) + 1
    # Results up to the last entry an earlier run decided are frozen as kept unless replaced.
    # Within a process the scan mark covers that; after a resume the stored uuid does.
    seen_upto = -1
    if start == 0 and st.get("seen_upto"):
        seen_upto = next((k for k in range(len(entries) - 1, -1, -1) if entries[k].uuid == st["seen_upto"]), -1)
    if start == 0 and replaced:
        forget_gone(replaced, entries)
    changes: dict[int, Entry] = {}
    deltas: dict[int, int] = {}
    totals = {"persisted": 0, "truncated": 0, "reapplied": 0, "repersisted": 0, "chars": 0}
    for i in range(start, len(entries)):
        if not has_tool_results(entries[i]):
            continue
        new, delta, counts = _process(entries, i, ctx, replaced, i <= seen_upto)
        for k, v in counts.items():
            totals[k] += v
        if new is not None:
            changes[i] = new
            deltas[i] = delta
    if entries:
        st["seen_upto"] = entries[-1].uuid
    if not changes:
        mark_set(rt, "scanned", entries)
        return LayerResult(entries)
    out = rewrite(entries, changes, deltas, ctx.state)
    mark_set(rt, "scanned", out)
    parts = []
    if totals["persisted"]:
        parts.append(f"persisted {totals['persisted']} large tool result(s) "
                     f"({totals['chars']:,} characters) to {FOLDER}/")
    if totals["truncated"]:
        parts.append(f"truncated {totals['truncated']} large tool result(s) "
                     "(no safe session folder to save them in, or saving failed)")
    if totals["repersisted"]:
        parts.append(f"re-persisted {totals['repersisted']} result(s) whose stored path was not trusted")
    if totals["reapplied"]:
        parts.append(f"re-applied {totals['reapplied']} frozen replacement(s)")
    report = CompactionReport(
        layer=NAME, trigger="budget", action="; ".join(parts) or "replaced large tool results",
        tokens_before=ctx.tokens, tokens_after=count_tokens(out, ctx.config.overhead_tokens, ctx.config.count_ratio),
        details={k: v for k, v in totals.items() if v})
    return LayerResult(out, report)
