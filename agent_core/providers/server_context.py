"""Anthropic's server-side context management, as ctxtui's `server` and `hybrid` engines.

The names and shapes come from the installed SDK's beta types (anthropic/types/beta/):
context editing is the beta `context-management-2025-06-27` with the edits
`clear_tool_uses_20250919` (clear old tool results past a trigger, keep N, clear at least M) and
`clear_thinking_20251015`; the response reports `context_management.applied_edits`. Server
compaction is the beta `compact-2026-01-12` with the edit `compact_20260112` (a trigger in input
tokens, optional instructions, `pause_after_compaction`): the answer then opens with a `compaction`
block (a readable summary plus opaque `encrypted_content` / `signature`) that later requests send
back verbatim in place of what it summarizes, and `usage.iterations` lists the compaction's own
usage (type `compaction`, not included in the top-level usage) beside the answer's (type `message`).
A compaction block whose content is null is a failed compaction, which the API treats as a no-op.

This module is plain data in and out (no SDK import): the plan of what a request asks for, and a
reading of what an answer says the server did. The loop turns the reading into compaction events.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from agent_core.providers.models_info import base_model

ENGINES = ("local", "server", "hybrid")
CONTEXT_MANAGEMENT_BETA = "context-management-2025-06-27"
COMPACT_BETA = "compact-2026-01-12"
CLEAR_TOOL_USES = "clear_tool_uses_20250919"
CLEAR_THINKING = "clear_thinking_20251015"
COMPACT_EDIT = "compact_20260112"
COMPACTION_BLOCK = "compaction"
# Our layer names for what the server did (timeline, stream-json, session log).
LAYER_OF_EDIT = {CLEAR_TOOL_USES: "server_clear_tool_uses", CLEAR_THINKING: "server_clear_thinking"}
SERVER_COMPACT_LAYER = "server_compact"
USAGE_KEYS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")

# What Anthropic's compaction documentation says (platform.claude.com/docs/en/build-with-claude/compaction,
# beta `compact-2026-01-12`, edit `compact_20260112`): it is supported on these models only (their ids,
# or a dated id of one of them: claude-opus-4-6-YYYYMMDD); its trigger defaults to 150,000 input
# tokens and may not be set below 50,000. The server and hybrid engines are built on this compaction
# (context editing alone would leave no summary at all), so a model not listed here, or a window whose
# auto-compact threshold is below the minimum, runs the local engine (see compaction_refusal).
COMPACT_MODELS = ("claude-opus-4-7", "claude-opus-4-6", "claude-sonnet-4-6", "claude-mythos-preview")
COMPACT_MODEL_NAMES = {"claude-opus-4-7": "Claude Opus 4.7", "claude-opus-4-6": "Claude Opus 4.6",
                       "claude-sonnet-4-6": "Claude Sonnet 4.6", "claude-mythos-preview": "Claude Mythos Preview"}
COMPACT_TRIGGER_DEFAULT = 150_000
COMPACT_TRIGGER_MIN = 50_000
_DATED = re.compile(r"-\d{8}")


def compacts(model: str) -> bool:
    """Is server compaction documented for `model`: one of COMPACT_MODELS or a dated id of one
    (Claude Code's `[1m]` suffix aside)?"""
    m = base_model(model)[0]
    return any(m == f or (m.startswith(f) and _DATED.fullmatch(m[len(f):])) for f in COMPACT_MODELS)


def compaction_refusal(model: str, trigger: int, window: int, needed_window: int | None = None) -> str | None:
    """Why the API's compaction cannot be asked for `model` at our auto-compact threshold
    `trigger` (of a `window`-token context window), or None when it can. `needed_window`: the
    smallest window whose threshold would reach the minimum, when the caller knows it."""
    if not compacts(model):
        listed = ", ".join(f"{COMPACT_MODEL_NAMES[f]} ({f})" for f in COMPACT_MODELS)
        return (f"the API's server compaction ({COMPACT_BETA}) is documented only for {listed}, "
                f"and {base_model(model)[0]!r} is not one of them")
    if trigger < COMPACT_TRIGGER_MIN:
        need = f"; that needs a context window of at least {needed_window:,}" if needed_window else ""
        return (f"at a {window:,}-token context window ctxtui compacts at {trigger:,} tokens, and the API's "
                f"compaction trigger may not be below {COMPACT_TRIGGER_MIN:,} tokens{need}")
    return None


@dataclass(frozen=True)
class ServerPlan:
    """What each request asks the server to do. `clear_trigger` None: no context editing (hybrid,
    whose own cheap layers do that work); `compact_trigger` is the input-token count at which the
    server summarizes (our auto-compact threshold)."""
    engine: str
    compact_trigger: int
    clear_trigger: int | None = None
    clear_keep: int = 5
    clear_at_least: int = 0
    exclude_tools: tuple[str, ...] = ()
    pause_after_compaction: bool = False
    instructions: str | None = None

    def __post_init__(self) -> None:
        if self.engine not in ENGINES[1:]:
            raise ValueError(f"a server plan is for the server or hybrid engine, not {self.engine!r}")

    def betas(self) -> list[str]:
        out = [COMPACT_BETA]
        if self.clear_trigger is not None:
            out.insert(0, CONTEXT_MANAGEMENT_BETA)
        return out

    def edits(self) -> list[dict]:
        edits: list[dict] = []
        if self.clear_trigger is not None:
            clear: dict[str, Any] = {"type": CLEAR_TOOL_USES,
                                     "trigger": {"type": "input_tokens", "value": int(self.clear_trigger)},
                                     "keep": {"type": "tool_uses", "value": int(self.clear_keep)}}
            if self.clear_at_least > 0:
                clear["clear_at_least"] = {"type": "input_tokens", "value": int(self.clear_at_least)}
            if self.exclude_tools:
                clear["exclude_tools"] = list(self.exclude_tools)
            edits.append(clear)
        compact: dict[str, Any] = {"type": COMPACT_EDIT,
                                   "trigger": {"type": "input_tokens", "value": int(self.compact_trigger)}}
        if self.pause_after_compaction:
            compact["pause_after_compaction"] = True
        if self.instructions:
            compact["instructions"] = self.instructions
        edits.append(compact)
        return edits

    def context_management(self, purpose: str = "main") -> dict | None:
        """The request's `context_management`. A call of ctxtui's own (a summary, session notes)
        keeps the clears, so it is shown what the main call was shown and reads its cached prefix,
        but never asks the server to compact it: its answer must be ours."""
        edits = self.edits() if purpose == "main" else [e for e in self.edits() if e["type"] != COMPACT_EDIT]
        return {"edits": edits} if edits else None


def plan_for(engine: str, *, compact_trigger: int, window: int, micro_trigger_ratio: float, keep_recent: int,
             clear_at_least_ratio: float, tool_names: list[str], compactable: frozenset[str],
             preserved: frozenset[str] = frozenset()) -> ServerPlan | None:
    """The plan for an engine from our own thresholds: the server clears tool results where our
    microcompact would (same share of the window, same number kept, the same minimum worth a cache
    rewrite, the same tools spared) and compacts at our auto-compact threshold. None for `local`."""
    if engine == "local":
        return None
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; expected one of {', '.join(ENGINES)}")
    if engine == "hybrid":
        return ServerPlan("hybrid", compact_trigger=compact_trigger)
    spared = tuple(sorted(n for n in tool_names if n not in compactable or n in preserved))
    clear_trigger = min(int(window * micro_trigger_ratio), compact_trigger)
    return ServerPlan("server", compact_trigger=compact_trigger, clear_trigger=clear_trigger, clear_keep=keep_recent,
                      clear_at_least=int(window * clear_at_least_ratio), exclude_tools=spared)


# ---------------------------------------------------------------- reading an answer

@dataclass
class ServerClear:
    layer: str                 # server_clear_tool_uses | server_clear_thinking
    cleared_tokens: int
    cleared: int               # tool uses (or thinking turns) cleared


@dataclass
class ServerOutcome:
    """What the server did for one answer."""
    clears: list[ServerClear] = field(default_factory=list)
    compaction_index: int | None = None       # where the compaction block sits in the answer's content
    compaction_failed: bool = False           # the block came back with null content (a no-op)
    summary: str = ""                         # the block's readable summary
    compaction_usage: dict | None = None      # the compaction iteration's own usage
    message_usage: dict | None = None         # the last sampling iteration's usage, when reported
    ignored: list[str] = field(default_factory=list)   # fields of the wrong type, left out (see read_outcome)

    @property
    def compacted(self) -> bool:
        return self.compaction_index is not None and not self.compaction_failed

    @property
    def acted(self) -> bool:
        return bool(self.clears) or self.compaction_index is not None


def _what(v: Any) -> str:
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    return f"a {type(v).__name__}"


def _int(v: Any) -> int:
    """A count: a whole number >= 0; anything else (None, a string, NaN, infinity, a bool) is 0."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return 0
    if isinstance(v, float) and not math.isfinite(v):
        return 0
    return max(0, int(v))


def _bad_count(v: Any) -> bool:
    """A value where a count belongs that is present but not one (None is just absent)."""
    if v is None:
        return False
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return True
    return isinstance(v, float) and not math.isfinite(v) or v < 0


def _check_counts(d: dict, keys: tuple[str, ...], where: str, ignored: list[str]) -> None:
    for k in keys:
        if _bad_count(d.get(k)):
            ignored.append(f"{where}.{k} ({_what(d.get(k))})")


def iteration_usage(it: dict) -> dict:
    """One `usage.iterations` entry in the usage form the cost book takes."""
    counts = {k: _int(it.get(k)) for k in USAGE_KEYS}
    cc = it.get("cache_creation")
    if isinstance(cc, dict):
        creation = {"ephemeral_5m_input_tokens": _int(cc.get("ephemeral_5m_input_tokens")),
                    "ephemeral_1h_input_tokens": _int(cc.get("ephemeral_1h_input_tokens"))}
    else:
        creation = {"ephemeral_5m_input_tokens": counts["cache_creation_input_tokens"],
                    "ephemeral_1h_input_tokens": 0}
    return {**counts, "cache_creation": creation}


def input_total(usage: dict | None) -> int:
    """Everything a usage says was read as input: uncached, cache writes and cache reads."""
    if not usage:
        return 0
    return _int(usage.get("input_tokens")) + _int(usage.get("cache_creation_input_tokens")) + \
        _int(usage.get("cache_read_input_tokens"))


def read_outcome(content: list[dict], server: dict | None) -> ServerOutcome:
    """The server's edits and compaction in one answer: `content` its blocks (plain dicts), `server`
    the answer's `context_management` and `usage.iterations` ({"context_management": ..., "iterations": ...}).

    These fields come from the server as it sent them, so any of them can be of the wrong type (a
    proxy or a broken server: a string, a list of numbers, NaN counts). Such a field is left out —
    a count of the wrong type counts 0 — and named in `ignored`, so the loop can say so; the answer
    itself is always kept."""
    out = ServerOutcome()
    server = server if isinstance(server, dict) else {}
    cm = server.get("context_management")
    edits: Any = None
    if isinstance(cm, dict):
        edits = cm.get("applied_edits")
        if edits is not None and not isinstance(edits, list):
            out.ignored.append(f"context_management.applied_edits ({_what(edits)})")
            edits = None
    elif cm is not None:
        out.ignored.append(f"context_management ({_what(cm)})")
    for i, edit in enumerate(edits or ()):
        if not isinstance(edit, dict):
            out.ignored.append(f"context_management.applied_edits[{i}] ({_what(edit)})")
            continue
        layer = LAYER_OF_EDIT.get(str(edit.get("type")))
        if layer is None:
            continue
        count_key = "cleared_tool_uses" if "cleared_tool_uses" in edit else "cleared_thinking_turns"
        _check_counts(edit, ("cleared_input_tokens", count_key), f"context_management.applied_edits[{i}]",
                      out.ignored)
        out.clears.append(ServerClear(layer, _int(edit.get("cleared_input_tokens")), _int(edit.get(count_key))))
    for i, b in enumerate(content):
        if isinstance(b, dict) and b.get("type") == COMPACTION_BLOCK:
            out.compaction_index = i
            summary = b.get("content")
            out.compaction_failed = not isinstance(summary, str) or not summary
            out.summary = summary if isinstance(summary, str) else ""
    iterations = server.get("iterations")
    if iterations is not None and not isinstance(iterations, list):
        out.ignored.append(f"usage.iterations ({_what(iterations)})")
        iterations = None
    for i, it in enumerate(iterations or ()):
        if not isinstance(it, dict):
            out.ignored.append(f"usage.iterations[{i}] ({_what(it)})")
            continue
        if it.get("type") not in ("compaction", "message"):
            continue
        _check_counts(it, USAGE_KEYS, f"usage.iterations[{i}]", out.ignored)
        if it.get("type") == "compaction":
            out.compaction_usage = iteration_usage(it)
        else:
            out.message_usage = iteration_usage(it)
    return out


def ignored_notice(ignored: list[str]) -> str:
    """What the loop says when an answer's server fields were of the wrong type."""
    shown = ", ".join(ignored[:4]) + (f" and {len(ignored) - 4} more" if len(ignored) > 4 else "")
    return (f"The API's answer reported what it did to the context in fields of an unexpected type, "
            f"left out: {shown}. The answer itself is kept; its cost and context figures may be low.")


def is_beta_rejection(status: int | None, message: str) -> bool:
    """A 400 that says the API does not take what the server engines send (a beta it does not know,
    or a field or edit it refuses), rather than a problem of the conversation itself."""
    if status not in (400, 404):
        return False
    low = message.lower()
    return any(w in low for w in ("beta", "context_management", "context-management", COMPACT_EDIT,
                                  CLEAR_TOOL_USES, "compaction"))
