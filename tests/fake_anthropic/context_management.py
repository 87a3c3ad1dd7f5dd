"""The fake server's side of the context-management betas, as the SDK's beta types describe them.

- `clear_tool_uses_20250919` (beta context-management-2025-06-27): past `trigger` input tokens, the
  results of all but the newest `keep` tool uses (tools in `exclude_tools` spared) are replaced by a
  placeholder in what the model is shown; nothing happens unless that frees `clear_at_least`. The
  answer reports it in `context_management.applied_edits`.
- `compact_20260112` (beta compact-2026-01-12): past `trigger` input tokens (after the clears), the
  conversation is summarized into a `compaction` block (a readable summary plus opaque
  `encrypted_content` and `signature`) that opens the answer; with `pause_after_compaction` the
  answer is that block alone (stop reason `compaction`). `usage.iterations` then holds the
  compaction step's usage and the answer's own. A failed compaction returns the block with null
  content and changes nothing.
- A request whose messages hold a compaction block with content is read from that block on: what
  came before it is what it summarizes. A block with null content is a no-op.

As strict as the API's compaction documentation: `compact_20260112` only for the models it lists
(a dated id of one too), and a trigger of at least 50,000 input tokens; anything else is a 400
invalid_request_error. (This list is the fake's own, kept apart from ctxtui's, so a test checks
ctxtui against it rather than against itself.)
"""
from __future__ import annotations

import copy
import hashlib
import re
from dataclasses import dataclass, field

from tests.fake_anthropic.usage import count_input
from tests.fake_anthropic.validation import RequestError

CONTEXT_MANAGEMENT_BETA = "context-management-2025-06-27"
COMPACT_BETA = "compact-2026-01-12"
BETA_OF_EDIT = {"clear_tool_uses_20250919": CONTEXT_MANAGEMENT_BETA, "clear_thinking_20251015": CONTEXT_MANAGEMENT_BETA,
                "compact_20260112": COMPACT_BETA}
CLEARED = "[cleared by the API's context management]"
DEFAULT_COMPACT_TRIGGER = 150_000   # the API's documented default
MIN_COMPACT_TRIGGER = 50_000        # and its documented minimum
COMPACTION_MODELS = ("claude-mythos-preview", "claude-opus-4-7", "claude-opus-4-6", "claude-sonnet-4-6")


def compaction_supported(model: object) -> bool:
    """A model the compaction documentation lists, or a dated id of one (claude-sonnet-4-6-20260217)."""
    return isinstance(model, str) and any(re.fullmatch(re.escape(m) + r"(-\d{8})?", model)
                                          for m in COMPACTION_MODELS)


def _bad(msg: str) -> RequestError:
    return RequestError(400, "invalid_request_error", msg)


@dataclass
class Managed:
    """One request as the model is shown it, and what the server did to get there."""
    view: dict                                   # the body the model sees (and the cache is priced on)
    applied_edits: list[dict] = field(default_factory=list)
    compaction: dict | None = None               # the compaction block the answer opens with
    size: int = 0                                # input tokens after the clears, before any compaction
    pause: bool = False


def check(body: dict, betas: set[str], rejected: set[str]) -> None:
    """The betas the edits need were sent, the edits have the SDK's shapes, and no beta this fake
    is told to reject (a server that does not offer it) was asked for."""
    refused = sorted(betas & rejected)
    if refused:
        raise _bad(f"Unexpected value(s) `{', '.join(refused)}` for the `anthropic-beta` header. Please consult our "
                   f"documentation at docs.anthropic.com or try again without the header.")
    if COMPACT_BETA not in betas and any(isinstance(b, dict) and b.get("type") == "compaction"
                                         for m in body.get("messages") or () if isinstance(m, dict)
                                         for b in (m.get("content") if isinstance(m.get("content"), list) else ())):
        raise _bad(f"messages: a compaction block requires the `{COMPACT_BETA}` beta header")
    cm = body.get("context_management")
    if cm is None:
        return
    edits = cm.get("edits") if isinstance(cm, dict) else None
    if not isinstance(edits, list):
        raise _bad("context_management.edits: Input should be a valid list")
    for i, e in enumerate(edits):
        kind = e.get("type") if isinstance(e, dict) else None
        if kind not in BETA_OF_EDIT:
            raise _bad(f"context_management.edits.{i}: Input tag {kind!r} does not match any of the expected tags")
        if BETA_OF_EDIT[kind] not in betas:
            raise _bad(f"context_management.edits.{i}: {kind} requires the `{BETA_OF_EDIT[kind]}` beta header")
        trigger = e.get("trigger")
        if trigger is not None and (not isinstance(trigger, dict) or not isinstance(trigger.get("value"), int)):
            raise _bad(f"context_management.edits.{i}.trigger: Input should be an object with an integer value")
        if kind == "compact_20260112":
            if not compaction_supported(body.get("model")):
                raise _bad(f"context_management.edits.{i}: `compact_20260112` is not supported on model "
                           f"'{body.get('model')}'. Compaction is supported on: {', '.join(COMPACTION_MODELS)}.")
            if trigger is not None and trigger["value"] < MIN_COMPACT_TRIGGER:
                raise _bad(f"context_management.edits.{i}.trigger.value: Input should be greater than or equal to "
                           f"{MIN_COMPACT_TRIGGER} (the compaction trigger must be at least {MIN_COMPACT_TRIGGER:,} "
                           f"input tokens), got {trigger['value']}")


def _from_last_compaction(messages: list[dict]) -> list[dict]:
    """The messages the model is shown: from the last compaction block that has content on."""
    for i in range(len(messages) - 1, -1, -1):
        content = messages[i].get("content")
        if not isinstance(content, list):
            continue
        for j in range(len(content) - 1, -1, -1):
            b = content[j]
            if isinstance(b, dict) and b.get("type") == "compaction" and b.get("content"):
                return [{**messages[i], "content": content[j:]}, *messages[i + 1:]]
    return messages


def _tool_names(messages: list[dict]) -> dict[str, str]:
    return {b["id"]: b.get("name", "") for m in messages for b in m.get("content") or []
            if isinstance(b, dict) and b.get("type") == "tool_use" and "id" in b}


def _clear(view: dict, edit: dict) -> dict | None:
    """Apply one clear_tool_uses edit to `view` in place; the applied-edit report, or None."""
    before = count_input(view)
    if before <= int((edit.get("trigger") or {}).get("value", 100_000)):
        return None
    keep = int((edit.get("keep") or {}).get("value", 3))
    spared = set(edit.get("exclude_tools") or ())
    names = _tool_names(view["messages"])
    results = [b for m in view["messages"] if isinstance(m.get("content"), list) for b in m["content"]
               if isinstance(b, dict) and b.get("type") == "tool_result"]
    candidates = results[:max(0, len(results) - keep)]
    targets = [b for b in candidates if names.get(b.get("tool_use_id")) not in spared and b.get("content") != CLEARED]
    if not targets:
        return None
    trial = copy.deepcopy(view)
    ids = {b.get("tool_use_id") for b in targets}
    for m in trial["messages"]:
        for b in m.get("content") if isinstance(m.get("content"), list) else ():
            if isinstance(b, dict) and b.get("type") == "tool_result" and b.get("tool_use_id") in ids:
                b["content"] = CLEARED
    freed = before - count_input(trial)
    if freed < int((edit.get("clear_at_least") or {}).get("value", 0)) or freed <= 0:
        return None
    view["messages"] = trial["messages"]
    return {"type": "clear_tool_uses_20250919", "cleared_input_tokens": freed, "cleared_tool_uses": len(targets)}


def summary_of(messages: list[dict]) -> str:
    """A short readable summary: how much was summarized, and the user's own words."""
    said = []
    for m in messages:
        for b in m.get("content") if isinstance(m.get("content"), list) else ():
            if m.get("role") == "user" and isinstance(b, dict) and b.get("type") == "text":
                said.append(" ".join(b.get("text", "").split())[:60])
    return (f"Summary of {len(messages)} earlier messages (fake server compaction). The user asked: "
            + "; ".join(s for s in said[-5:] if s) + ".")


def compaction_block(summary: str | None, seed: str) -> dict:
    """The block as this fake sends it: readable content plus opaque content and a signature;
    a failed compaction has null content and nothing else to carry."""
    if summary is None:
        return {"type": "compaction", "content": None, "encrypted_content": None}
    digest = hashlib.sha256((seed + summary).encode()).hexdigest()
    return {"type": "compaction", "content": summary, "encrypted_content": "enc-" + digest[:48],
            "signature": "sig-" + digest[48:]}


def manage(body: dict, *, fail_compaction: bool = False) -> Managed:
    """What the server makes of `body` before the model sees it."""
    view = copy.deepcopy(body)
    view.pop("context_management", None)
    view["messages"] = _from_last_compaction(view.get("messages") or [])
    out = Managed(view)
    edits = (body.get("context_management") or {}).get("edits") or []
    for edit in edits:
        if edit.get("type") == "clear_tool_uses_20250919":
            applied = _clear(view, edit)
            if applied is not None:
                out.applied_edits.append(applied)
    out.size = count_input(view)
    for edit in edits:
        if edit.get("type") != "compact_20260112":
            continue
        trigger = int((edit.get("trigger") or {}).get("value", DEFAULT_COMPACT_TRIGGER))
        if out.size <= trigger:
            continue
        out.pause = bool(edit.get("pause_after_compaction"))
        summary = None if fail_compaction else summary_of(view["messages"])
        out.compaction = compaction_block(summary, str(len(view["messages"])))
        if summary is not None:
            view["messages"] = [{"role": "assistant", "content": [out.compaction]}]
    return out
