"""What every layer is handed: one config for the whole pipeline, the state that survives a
resume, and the context of one run (count, trigger, focus). The layers and the pipeline both
import these from here, so the pipeline can import its layers without a circle.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

from compaction.accounting.budget import ContextBudget
from compaction.accounting.cache_model import Rates
from compaction.accounting.tokens import Calibration
from compaction.entry import Entry
from compaction.report import LayerResult


@dataclass
class PipelineConfig:
    """One config for every layer. Layer-specific knobs live here so a session has one place to tune."""
    budget: ContextBudget = field(default_factory=ContextBudget)
    overhead_tokens: int = 0               # system prompt + tool definitions, used before any usage exists
    # server tokens per estimated token, learned by the caller from usage and count_tokens
    # (docs/engine.md, "Counting"); None: uncalibrated (estimates count as they are)
    calibration: float | None = None
    calibration_assistant: float | None = None   # the same for the model's answers; None: `calibration`
    # prompt-cache economics (compaction/accounting/cache_model.py): the TTL the client asks for and the
    # model's dollars per token (handed in from agent_core.pricing; Sonnet-like list prices otherwise:
    # the rewrite decisions depend only on the ratios between buckets)
    cache_ttl: str = "5m"
    cache_rates: Rates = field(default_factory=lambda: Rates.from_input(3.0, 15.0))
    cache_rates_known: bool = False        # the rates are the model's own (else the default: no dollars shown)
    cache_aware: bool = True   # prefix-rewriting layers act only when it pays (compaction/cache_economics.py);
                               # False: the token-only rules (each layer's own trigger alone)
    always_prevent_summary: bool = False  # True: at the auto-compact threshold, rewrite whenever that gets the
                                          # count under it, whatever it costs against the summary it puts off
    early_compaction: bool = True   # cache_aware: a summarizing stage that needs no model (session memory) may
                                    # act below the auto-compact threshold when that pays in dollars
                                    # (cache_economics.compaction_verdict: a cold cache, or reads saved > rewrite)
    proactive: bool = True          # summaries at the auto-compact threshold, and the local blocking limit; False
                                    # (the cc-reactive preset): summaries only on request or after the API refused a
                                    # request as too long, and every request is sent for the API to judge
    # 1. tool-result budget (CC numbers): runs in every preset but `none`; decisions frozen per tool_use_id
    tool_result_budget_enabled: bool = True
    tool_result_max_chars: int = 50_000       # one result over this is persisted
    message_results_max_chars: int = 200_000  # one message's results over this: largest persisted first
    preview_bytes: int = 2_000
    self_bounded_tools: frozenset[str] = frozenset({"read_file"})
    # 2. snip: drop old middle rounds (archive first, leave a marker)
    snip_enabled: bool = True
    snip_trigger_ratio: float | None = None  # share of the effective window; None = the auto-compact threshold,
                                             # and then only while automatic summarizing cannot run
    snip_target_ratio: float = 0.5           # drop oldest middle rounds until the count is at most this share
    snip_keep_recent_ratio: float = 0.1      # the recent tail kept holds at least this share of tokens ...
    snip_keep_recent_rounds: int = 2         # ... and at least this many API rounds
    snip_growth_ratio: float = 0.05          # hysteresis: fire again only after the count grew this share
    # 3. microcompact
    microcompact_enabled: bool = True
    compactable_tools: frozenset[str] = frozenset({"bash", "read_file", "grep", "glob", "write_file", "edit_file"})
    preserved_tools: frozenset[str] = frozenset()   # compactable tools whose results are never cleared
    micro_count_enabled: bool = True          # count-based clearing (the `cc` preset has the time-based alone)
    micro_keep_recent: int = 5                # count-based: seen compactable results kept, at least ...
    micro_keep_share: float = 0.25            # ... and more of the newest while they add up to this share of the
                                              # effective window (the reads asked for next; issue 49)
    micro_min_chars: int = 100                # results this short or shorter are never cleared
    micro_trigger_ratio: float = 0.5          # count-based acts only at or above this share of the window ...
    micro_clear_at_least_ratio: float = 0.05  # ... and only when clearing frees this share (cache rewrite worth it)
    time_based_enabled: bool = True
    time_gap_minutes: float | None = None     # time-based: gap since the last assistant message; None = the cache
                                              # TTL (the cached prefix has expired, so a rewrite is free)
    time_keep_recent: int = 5
    # 4. context collapse (read-time projection; the working history is untouched)
    collapse_enabled: bool = True
    collapse_commit_ratio: float = 0.90       # commit new spans at or above this share of the window
    collapse_target_ratio: float = 0.75       # ... until the view is at most this share
    collapse_warm_target_ratio: float = 0.4   # ... this share when the cache is warm (cache_aware): a commit then
                                              # rewrites the cached prefix, so it must buy room for many calls
    collapse_keep_recent_ratio: float = 0.15  # the recent tail is never collapsed (tokens share ...)
    collapse_keep_recent_rounds: int = 3      # ... and rounds)
    collapse_span_rounds: int = 6             # rounds per digest
    collapse_digest_chars: int = 600
    # extra knobs for layers added later, by name
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def count_ratio(self) -> Calibration:
        """The rates estimates are counted at: the calibration, or 1.0 before there is one."""
        r = self.calibration or 1.0
        return Calibration(r, self.calibration_assistant or r)


@dataclass
class PipelineState:
    """Per-layer state that must survive a resume (frozen decisions, collapse store, breakers).

    Each layer owns `layers[name]`; values are JSON-serialisable so the session log can store them."""
    layers: dict[str, dict[str, Any]] = field(default_factory=dict)

    def of(self, name: str) -> dict[str, Any]:
        return self.layers.setdefault(name, {})

    def to_dict(self) -> dict[str, Any]:
        return {"layers": self.layers}

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> "PipelineState":
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
    summarizing: bool = False        # automatic summarizing (layers 5-6) can run: stages exist, on, no breaker
    history: list[Entry] | None = None  # summarizing stages: the whole working history (for the transcript);
                                        # the entries they are handed are the projected view
    replay_only: bool = False        # projecting layers: replay what is committed, commit nothing new
    cheap_summary: bool = False      # a summarizing stage that needs no model (session memory) can act, under the
                                     # threshold too: the summary a rewrite puts off is a cheap one
    early: bool = False              # summarizing stages: the count is under the auto-compact threshold; act only
                                     # when compacting now pays (cache_economics.judge_compaction), never fail
    dry_run: bool = False            # a preview (compaction/preview.py): decide as usual, write no file

    @property
    def budget(self) -> ContextBudget:
        return self.config.budget


Layer = Callable[[list[Entry], LayerContext], LayerResult]


class CompactionStage(Protocol):
    """A summarizing layer (session memory, LLM auto-compact). Returns None when it did not act."""
    name: str

    async def __call__(self, entries: list[Entry], ctx: LayerContext) -> LayerResult | None: ...
