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

from dataclasses import dataclass, field
from typing import Any

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

    @property
    def compacted(self) -> bool:
        return self.compaction_index is not None and not self.compaction_failed

    @property
    def acted(self) -> bool:
        return bool(self.clears) or self.compaction_index is not None


def _int(v: Any) -> int:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0


def iteration_usage(it: dict) -> dict:
    """One `usage.iterations` entry in the usage form the cost book takes."""
    out = {k: _int(it.get(k)) for k in USAGE_KEYS}
    cc = it.get("cache_creation")
    if isinstance(cc, dict):
        out["cache_creation"] = {"ephemeral_5m_input_tokens": _int(cc.get("ephemeral_5m_input_tokens")),
                                 "ephemeral_1h_input_tokens": _int(cc.get("ephemeral_1h_input_tokens"))}
    else:
        out["cache_creation"] = {"ephemeral_5m_input_tokens": out["cache_creation_input_tokens"],
                                 "ephemeral_1h_input_tokens": 0}
    return out


def input_total(usage: dict | None) -> int:
    """Everything a usage says was read as input: uncached, cache writes and cache reads."""
    if not usage:
        return 0
    return _int(usage.get("input_tokens")) + _int(usage.get("cache_creation_input_tokens")) + \
        _int(usage.get("cache_read_input_tokens"))


def read_outcome(content: list[dict], server: dict | None) -> ServerOutcome:
    """The server's edits and compaction in one answer: `content` its blocks (plain dicts), `server`
    the answer's `context_management` and `usage.iterations` ({"context_management": ..., "iterations": ...})."""
    out = ServerOutcome()
    server = server or {}
    cm = server.get("context_management")
    for edit in (cm.get("applied_edits") if isinstance(cm, dict) else None) or ():
        if not isinstance(edit, dict):
            continue
        layer = LAYER_OF_EDIT.get(str(edit.get("type")))
        if layer is None:
            continue
        count = edit.get("cleared_tool_uses", edit.get("cleared_thinking_turns"))
        out.clears.append(ServerClear(layer, _int(edit.get("cleared_input_tokens")), _int(count)))
    for i, b in enumerate(content):
        if isinstance(b, dict) and b.get("type") == COMPACTION_BLOCK:
            out.compaction_index = i
            summary = b.get("content")
            out.compaction_failed = not isinstance(summary, str) or not summary
            out.summary = summary if isinstance(summary, str) else ""
    iterations = server.get("iterations")
    for it in iterations if isinstance(iterations, list) else ():
        if not isinstance(it, dict):
            continue
        if it.get("type") == "compaction":
            out.compaction_usage = iteration_usage(it)
        elif it.get("type") == "message":
            out.message_usage = iteration_usage(it)
    return out


def is_beta_rejection(status: int | None, message: str) -> bool:
    """A 400 that says the API does not take what the server engines send (a beta it does not know,
    or a field or edit it refuses), rather than a problem of the conversation itself."""
    if status not in (400, 404):
        return False
    low = message.lower()
    return any(w in low for w in ("beta", "context_management", "context-management", COMPACT_EDIT,
                                  CLEAR_TOOL_USES, "compaction"))
