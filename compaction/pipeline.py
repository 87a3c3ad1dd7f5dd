"""The compaction pipeline (DESIGN §5): before every model call, cheapest layer first.

Layers 1–3 rewrite the working history (the loop adopts `PipelineResult.entries`); layer 4,
context collapse, is a read-time projection used only for the request. The summarizing stages
(session memory, LLM auto-compact) are handed in behind `CompactionStage` so this package never
talks to a model itself.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

from .budget import ContextBudget
from .entry import Entry, project
from .report import CompactionReport, LayerResult
from .tokens import count_tokens


@dataclass
class PipelineConfig:
    """One config for every layer. Layer-specific knobs live here so a session has one place to tune."""
    budget: ContextBudget = field(default_factory=ContextBudget)
    overhead_tokens: int = 0               # system prompt + tool definitions, used before any usage exists
    # 1. tool-result budget (CC numbers)
    tool_result_max_chars: int = 50_000
    message_results_max_chars: int = 200_000
    preview_bytes: int = 2_000
    self_bounded_tools: frozenset[str] = frozenset({"read_file"})
    # 2. snip
    snip_enabled: bool = True
    # 3. microcompact
    microcompact_enabled: bool = True
    micro_keep_recent: int = 5
    micro_min_chars: int = 100
    preserved_tools: frozenset[str] = frozenset()
    time_gap_minutes: float = 60.0
    time_keep_recent: int = 5
    # 4. context collapse
    collapse_enabled: bool = True
    collapse_commit_ratio: float = 0.90
    # extra knobs for layers added later, by name
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class PipelineState:
    """Per-layer state that must survive a resume (frozen decisions, collapse store, breakers).

    Each layer owns `layers[name]`; values are JSON-serialisable so the session log can store them."""
    layers: dict[str, dict] = field(default_factory=dict)

    def of(self, name: str) -> dict:
        return self.layers.setdefault(name, {})

    def to_dict(self) -> dict:
        return {"layers": self.layers}

    @classmethod
    def from_dict(cls, d: dict | None) -> "PipelineState":
        return cls(layers=dict((d or {}).get("layers", {})))


@dataclass
class LayerContext:
    config: PipelineConfig
    state: PipelineState
    session_dir: Path | None
    now: float
    tokens: int                      # the count before this layer ran
    trigger: str = "auto"
    instructions: str | None = None  # manual /compact focus

    @property
    def budget(self) -> ContextBudget:
        return self.config.budget


Layer = Callable[[list[Entry], LayerContext], LayerResult]


class CompactionStage(Protocol):
    """A summarizing layer (session memory, LLM auto-compact). Returns None when it did not act."""
    name: str

    async def __call__(self, entries: list[Entry], ctx: LayerContext) -> LayerResult | None: ...


@dataclass
class PipelineResult:
    entries: list[Entry]            # the working history to adopt
    request: list[dict]             # the messages to send (collapse applied)
    reports: list[CompactionReport]
    tokens: int                     # count of what will be sent
    state: str                      # ok | warning | error | autocompact | blocking


def default_layers() -> tuple[list[tuple[str, Layer]], list[tuple[str, Layer]]]:
    from . import collapse, microcompact, snip, tool_result_budget

    rewriting = [("tool_result_budget", tool_result_budget.apply), ("snip", snip.apply),
                 ("microcompact", microcompact.apply)]
    projecting = [("collapse", collapse.apply)]
    return rewriting, projecting


class Pipeline:
    def __init__(self, config: PipelineConfig | None = None, session_dir: Path | None = None,
                 stages: Sequence[CompactionStage] = (), state: PipelineState | None = None,
                 layers: tuple[list[tuple[str, Layer]], list[tuple[str, Layer]]] | None = None) -> None:
        self.config = config or PipelineConfig()
        self.session_dir = session_dir
        self.stages = list(stages)
        self.state = state or PipelineState()
        self.rewriting, self.projecting = layers or default_layers()

    def count(self, entries: Sequence[Entry]) -> int:
        return count_tokens(entries, self.config.overhead_tokens)

    def _ctx(self, entries: Sequence[Entry], now: float, trigger: str = "auto", instructions: str | None = None) -> LayerContext:
        return LayerContext(self.config, self.state, self.session_dir, now, self.count(entries), trigger, instructions)

    def run_cheap(self, entries: Sequence[Entry], now: float | None = None) -> PipelineResult:
        """Layers 1–4 only: no model call, synchronous."""
        now = time.time() if now is None else now
        work = list(entries)
        reports: list[CompactionReport] = []
        for _name, layer in self.rewriting:
            res = layer(work, self._ctx(work, now))
            work = res.entries
            if res.report is not None:
                reports.append(res.report)
        view = work
        for _name, layer in self.projecting:
            res = layer(view, self._ctx(view, now))
            view = res.entries
            if res.report is not None:
                reports.append(res.report)
        tokens = self.count(view)
        return PipelineResult(work, project(view), reports, tokens, self.config.budget.state(tokens))

    async def run(self, entries: Sequence[Entry], now: float | None = None) -> PipelineResult:
        """The whole pipeline before a model call: cheap layers, then summarizing stages when the
        projected count is still at or above the auto-compact threshold."""
        res = self.run_cheap(entries, now)
        budget = self.config.budget
        if not budget.autocompact_enabled or res.tokens < budget.autocompact_threshold:
            return res
        return await self._summarize(res, now, "auto", None)

    async def compact(self, entries: Sequence[Entry], trigger: str = "manual", instructions: str | None = None,
                      now: float | None = None) -> PipelineResult:
        """Run the summarizing stages regardless of the threshold (manual `/compact`, reactive)."""
        res = self.run_cheap(entries, now)
        return await self._summarize(res, now, trigger, instructions)

    async def _summarize(self, res: PipelineResult, now: float | None, trigger: str,
                         instructions: str | None) -> PipelineResult:
        now = time.time() if now is None else now
        work = res.entries
        for stage in self.stages:
            out = await stage(work, self._ctx(work, now, trigger, instructions))
            if out is None:
                continue
            if out.report is not None:
                res.reports.append(out.report)
            if out.entries is not work:
                again = self.run_cheap(out.entries, now)
                again.reports[:0] = res.reports
                return again
        return res
