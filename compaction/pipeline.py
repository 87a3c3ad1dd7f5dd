"""The compaction pipeline: before every model call, cheapest layer first.

Layers 1–3 rewrite the working history (the loop adopts `PipelineResult.entries`); layer 4,
context collapse, is a read-time projection used only for the request. The summarizing stages
(session memory, LLM auto-compact) are handed in behind `CompactionStage` so this package never
talks to a model itself.
"""
from __future__ import annotations

import copy
import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from compaction import clock
from compaction.layers import collapse, microcompact, snip, tool_result_budget
from compaction.cache_economics import Reread, Verdict, judge_compaction
from compaction.breakers import BreakerConfig, Breakers, rejected_report
from compaction.entry import Entry
from compaction.layer_context import CompactionStage, Layer, LayerContext, PipelineConfig, PipelineState
from compaction.layerkit import Projector
from compaction.report import CompactionReport, LayerResult
from compaction.rounds import newest_round_tokens
from compaction.accounting.budget import ContextBudget
from compaction.accounting.tokens import count_tokens


@dataclass
class PipelineResult:
    entries: list[Entry]            # the working history to adopt
    request: list[dict[str, Any]]             # the messages to send (collapse applied)
    reports: list[CompactionReport]
    tokens: int                     # count of what will be sent
    state: str                      # ok | warning | error | autocompact | blocking
    view: list[Entry] = dataclasses.field(default_factory=list)  # the projected view `request` and `tokens` come from


def default_layers() -> tuple[list[tuple[str, Layer]], list[tuple[str, Layer]]]:
    rewriting: list[tuple[str, Layer]] = [("tool_result_budget", tool_result_budget.apply), ("snip", snip.apply),
                                          ("microcompact", microcompact.apply)]
    projecting: list[tuple[str, Layer]] = [("collapse", collapse.apply)]
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
        # told the count the summarizing stages are about to see at the auto-compact threshold
        # (after the cheap layers), so a front-end can show it before the compaction lands
        self.before_summary: Callable[[PipelineResult], None] | None = None
        # told each report as a layer or stage makes it, with the entries it was handed and returned
        # (a preview lists what each layer would do)
        self.on_step: Callable[[CompactionReport, list[Entry], list[Entry]], None] | None = None
        self.dry_run = False   # a preview's copy: layers decide as usual and write no file

    # How a caller (the agent loop) drives the engine: these methods, never a write to `config`
    # or `state` of its own.
    server_edits = False   # True: the server may shrink the request before the model reads it

    @property
    def api_judges(self) -> bool:
        """Every request is sent and the API judges its size: the server engine shrinks it before
        the model reads it (`server_edits`), or the policy compacts only after the API refused one
        (`PipelineConfig.proactive` off: Claude Code's reactive mode)."""
        return self.server_edits or not self.config.proactive

    @property
    def budget(self) -> ContextBudget:
        return self.config.budget

    @property
    def overhead_tokens(self) -> int:
        return self.config.overhead_tokens

    def set_budget(self, budget: ContextBudget) -> None:
        """Work within `budget` from now on (a smaller window the API named; the budget a
        compaction after a refusal aims for, put back afterwards)."""
        self.config.budget = budget

    def set_overhead(self, tokens: int) -> None:
        """What the system prompt and the tool definitions take, counted into every request."""
        self.config.overhead_tokens = tokens

    def set_calibration(self, ratio: float | None, assistant: float | None = None) -> None:
        """Count estimates at `ratio` server tokens each from now on, the model's answers at
        `assistant` (docs/engine.md, "Counting"): the caller learns them from the usage the server
        reports and from its count_tokens."""
        self.config.calibration, self.config.calibration_assistant = ratio, assistant

    def use_stages(self, stages: Sequence[CompactionStage]) -> None:
        """The summarizing stages, when they can only be built once the pipeline exists (they
        report to the agent that holds it)."""
        self.stages = list(stages)

    def on_before_summary(self, callback: Callable[[PipelineResult], None] | None) -> None:
        """Told the count the summarizing stages are about to see at the auto-compact threshold."""
        self.before_summary = callback

    def snapshot(self) -> dict[str, Any]:
        """The state that survives a resume, JSON-serialisable (the session log keeps it)."""
        return self.state.to_dict()

    def recalled(self, key: str) -> dict[str, Any] | None:
        """A part of the saved state a caller keeps with the engine's own (`remember`), or None.
        Read it only: changes go through `remember`."""
        part = self.state.layers.get(key)
        return part if isinstance(part, dict) else None

    def remember(self, key: str, values: Mapping[str, Any]) -> None:
        """Keep `values` under `key` in the state that survives a resume (merged into what is
        there); `key` must not be a layer's."""
        self.state.of(key).update(values)

    def forget(self, key: str) -> None:
        self.state.layers.pop(key, None)

    def dry_copy(self, stages: Sequence[CompactionStage] | None = None) -> "Pipeline":
        """A pipeline that decides exactly as this one would now, on a copy of its state, and writes
        no file (transcripts and saved tool results are named, not written): what a preview runs.
        `stages`: in place of this one's (a preview's summarizer makes no model call)."""
        dry = Pipeline(dataclasses.replace(self.config), self.session_dir,
                       self.stages if stages is None else stages, copy.deepcopy(self.state),
                       (self.rewriting, self.projecting))
        dry.dry_run = True
        return dry

    def verdict_for(self, entries: Sequence[Entry], after_tokens: int, fixed_usd: float = 0.0,
                    now: float | None = None, lost: Reread | None = None) -> Verdict:
        """What replacing `entries` (their projected view) by a history counted `after_tokens` would
        cost on the next call and save on each later one, with `lost` what it is expected to make
        the agent read again (cache_economics.judge_compaction)."""
        view, tokens = self.view(entries, now)
        ctx = self._ctx(view, clock.now() if now is None else now, tokens=tokens)
        return judge_compaction(view, ctx, after_tokens, fixed_usd, lost)

    def count(self, entries: Sequence[Entry]) -> int:
        return count_tokens(entries, self.config.overhead_tokens, self.config.count_ratio)

    def _ctx(self, entries: Sequence[Entry], now: float, trigger: str = "auto",
             instructions: str | None = None, tokens: int | None = None) -> LayerContext:
        summarizing = (bool(self.stages) and self.config.budget.autocompact_enabled and self.config.proactive
                       and self.breakers().allows("auto"))
        ctx = LayerContext(self.config, self.state, self.session_dir, now,
                           self.count(entries) if tokens is None else tokens, trigger, instructions, summarizing)
        ctx.dry_run = self.dry_run
        ctx.cheap_summary = (summarizing and self.config.cache_aware and self.config.early_compaction
                             and any(getattr(s, "early", False) for s in self.stages))
        return ctx

    def view(self, entries: Sequence[Entry], now: float | None = None) -> tuple[list[Entry], int]:
        """The projected view of an already adopted working history and its count, without acting:
        the projecting layers (collapse) replay what they committed and commit nothing new. What the
        context figure and its categories are computed from between pipeline runs."""
        now = clock.now() if now is None else now
        view = entries if isinstance(entries, list) else list(entries)
        for _name, layer in self.projecting:
            ctx = self._ctx(view, now)
            ctx.replay_only = True
            view = layer(view, ctx).entries
        return view, self.count(view)

    def run_cheap(self, entries: Sequence[Entry], now: float | None = None, commit: bool = True) -> PipelineResult:
        """Layers 1–4 only: no model call, synchronous, O(new entries) per turn in steady state.

        Layers run in order with one config, each handed the count as the previous one left it;
        each layer checks its own trigger against that count (tool-result budget: always, to keep
        frozen decisions; snip: the auto-compact threshold while summarizing cannot run, with
        hysteresis; microcompact: time gap, or its count trigger with batching; collapse: replays
        committed spans always, commits new ones at its ratio), so a later layer acts only if the
        count is still above its trigger. `commit=False`: the projecting layers only replay.
        `entries` of the result is the input list itself when no rewriting layer changed anything.
        """
        now = clock.now() if now is None else now
        work = entries if isinstance(entries, list) else list(entries)
        reports: list[CompactionReport] = []
        for _name, layer in self.rewriting:
            work = self._step(layer, work, now, reports)
        return self._project(work, now, reports, commit)

    def _step(self, layer: Layer, es: list[Entry], now: float, reports: list[CompactionReport],
              replay_only: bool = False) -> list[Entry]:
        t0 = time.perf_counter()
        ctx = self._ctx(es, now)
        ctx.replay_only = replay_only
        res = layer(es, ctx)
        if res.report is not None:
            rep = res.report
            if not rep.duration_s:
                rep = dataclasses.replace(rep, duration_s=time.perf_counter() - t0)
            reports.append(rep)
            self._said(rep, es, res.entries)
        return res.entries

    def _said(self, report: CompactionReport, before: list[Entry], after: list[Entry]) -> None:
        if self.on_step is not None:
            self.on_step(report, before, after)

    def _project(self, work: list[Entry], now: float, reports: list[CompactionReport],
                 commit: bool = True) -> PipelineResult:
        view = work
        for _name, layer in self.projecting:
            view = self._step(layer, view, now, reports, replay_only=not commit)
        tokens = self.count(view)
        projector = self.__dict__.get("_projector")
        if projector is None:
            projector = self.__dict__["_projector"] = Projector()
        return PipelineResult(work, projector.project(view), reports, tokens, self.config.budget.state(tokens), view)

    def _notes_first(self) -> bool:
        """True when a summarizing stage that needs no model (session memory) is tried before
        collapse commits: it leaves a smaller context for a like rewrite (cache_economics)."""
        cfg = self.config
        return (cfg.cache_aware and cfg.early_compaction and cfg.budget.autocompact_enabled and cfg.proactive
                and any(getattr(s, "early", False) for s in self.stages) and self.breakers().allows("auto"))

    async def run(self, entries: Sequence[Entry], now: float | None = None) -> PipelineResult:
        """The whole pipeline before a model call: cheap layers, then summarizing stages when the
        projected count is still at or above the auto-compact threshold.

        Each call counts as one turn for the thrash breaker (call it once per model call). Nothing
        automatic runs once a breaker has tripped; the loop should then check `blocked(res.tokens)`."""
        self._observe(entries)
        now = clock.now() if now is None else now
        budget = self.config.budget
        notes_first = self._notes_first()
        # with cheap notes, they get the first word: under the threshold when that pays, at it always;
        # only if they do not act may collapse commit (and at the threshold, the LLM summary run)
        res = self.run_cheap(entries, now, commit=False) if notes_first else self.run_cheap(entries, now)
        if notes_first:
            # the turn is counted before a compaction, as below; if the notes do not act, it is
            # counted again from the count collapse leaves (the breakers' state is put back first)
            before = copy.deepcopy(self.state.of("breakers"))
            n = len(res.reports)
            self._turn(res.tokens, res.reports)
            early = res.tokens < budget.autocompact_threshold
            if not early:
                self._say_before_summary(res)
            out = await self._summarize(res, now, "auto", None, early=early, only_early=True)
            if out is not res or any(r.details.get("failed") for r in res.reports[n:]):
                return out
            del res.reports[n:]
            self.state.layers["breakers"] = before
            res = self._project(res.entries, now, res.reports)
        self._turn(res.tokens, res.reports)
        if not (budget.autocompact_enabled and self.config.proactive) or res.tokens < budget.autocompact_threshold:
            return res
        if not self.breakers().allows("auto"):
            return res
        self._say_before_summary(res)
        return await self._summarize(res, now, "auto", None, skip_early=notes_first)

    def _say_before_summary(self, res: PipelineResult) -> None:
        if self.before_summary is not None:
            self.before_summary(res)

    def _turn(self, tokens: int, reports: list[CompactionReport]) -> None:
        trip = self.note_turn(tokens)
        if trip is not None:
            reports.append(trip)

    async def compact(self, entries: Sequence[Entry], trigger: str = "manual", instructions: str | None = None,
                      now: float | None = None) -> PipelineResult:
        """Run the summarizing stages regardless of the threshold: `manual` (`/compact [focus]`,
        the compact tool; allowed even after a breaker trip) or `reactive` (after the main call
        answered prompt-too-long; skipped once a breaker has tripped, see `auto_compact_stopped`)."""
        self._observe(entries)
        res = self.run_cheap(entries, now)
        if not self.breakers().allows(trigger):
            return res
        return await self._summarize(res, now, trigger, instructions)

    async def _summarize(self, res: PipelineResult, now: float | None, trigger: str,
                         instructions: str | None, early: bool = False, only_early: bool = False,
                         skip_early: bool = False) -> PipelineResult:
        """Stages in order; the first that returns a smaller, valid history wins. A stage that
        fails (report `details["failed"]`) or whose result is not smaller ends the attempt with
        the old history kept, and counts towards the failures breaker.

        `only_early`: only stages that can act under the threshold (`early = True`: no model call)
        are asked; `early` (under the threshold): they act only when compacting now pays in dollars;
        `skip_early`: those stages declined already this turn, so only the others are asked.

        Every stage reads the projected view (what the last request held, collapse included) and
        its count, not the stored history; the transcript it writes keeps the whole history."""
        now = clock.now() if now is None else now
        work = res.view or res.entries
        breakers = self.breakers()
        for stage in self.stages:
            cheap = getattr(stage, "early", False)
            if ((early or only_early) and not cheap) or (skip_early and cheap):
                continue
            ctx = self._ctx(work, now, trigger, instructions, tokens=res.tokens)
            ctx.history = res.entries
            ctx.early = early
            try:
                out = await stage(work, ctx)
            except Exception as exc:  # a stage bug must not take the session down; the history is kept
                out = LayerResult(work, CompactionReport(
                    layer=getattr(stage, "name", "stage"), trigger=trigger,
                    action=f"Compaction failed: internal error {type(exc).__name__}: {exc}. The history is unchanged.",
                    tokens_before=ctx.tokens, tokens_after=ctx.tokens,
                    details={"failed": True, "reason": f"{type(exc).__name__}: {exc}"}))
            if out is None:
                continue
            report = out.report
            if out.entries is not work and report is not None and not report.details.get("failed"):
                after = self.count(out.entries)
                if after >= ctx.tokens:
                    report = rejected_report(report.layer, f"the result would not be smaller ({ctx.tokens:,} → "
                                             f"{after:,} tokens)", trigger, ctx.tokens, after)
            if report is not None:
                self._said(report, work, work if report.details.get("failed") else out.entries)
            if report is not None and report.details.get("failed"):
                res.reports.append(report)
                why = report.details.get("reason") or report.details.get("why") or report.action
                trip = breakers.record_failure(why, trigger, ctx.tokens)
                if trip is not None:
                    res.reports.append(trip)
                return res
            if report is not None:
                res.reports.append(report)
            if out.entries is not work:
                breakers.record_success()
                again = self.run_cheap(out.entries, now)
                again.reports[:0] = res.reports
                return again
        return res

    # --- breakers (breakers.py), turns and blocking (budget.py) ----------------------------------
    def breakers(self) -> Breakers:
        """The breaker view over `state.of("breakers")`; knobs from `config.extra["breakers"]`
        (a `BreakerConfig`), CC's defaults otherwise."""
        cfg = self.config.extra.get("breakers")
        if isinstance(cfg, dict):
            cfg = BreakerConfig(**cfg)
        return Breakers(self.state.of("breakers"), cfg)

    def note_turn(self, tokens: int) -> CompactionReport | None:
        """Count one turn (`run` does it; call it yourself only if you bypass `run`). Returns the
        thrash-breaker report on the turn it trips."""
        return self.breakers().note_turn(tokens, self.config.budget.autocompact_threshold)

    def auto_compact_stopped(self) -> str | None:
        """Why automatic (and reactive) compaction is stopped for this session, or None."""
        return self.breakers().tripped

    def reset_breakers(self) -> None:
        self.breakers().reset()

    def blocked(self, tokens: int, view: Sequence[Entry] = ()) -> str | None:
        """A message for the user when `tokens` is at or above the blocking limit (send nothing), else
        None. When the newest round of `view` alone cannot fit, the message says so: compacting
        older history could never make room, and nothing of that round was dropped."""
        b = self.config.budget
        if tokens < b.blocking_limit or not self.config.proactive:   # reactive: the API judges
            return None
        alone = newest_round_tokens(view, self.config.overhead_tokens)
        if view and alone >= b.blocking_limit:
            return (f"The newest round alone — your message and the tool results the model has not seen yet — "
                    f"is about {alone:,} tokens with the system prompt and tools, at or above the blocking limit "
                    f"of {b.blocking_limit:,} (window {b.context_window:,}): it cannot fit, however much older "
                    f"history is compacted. Nothing was sent and nothing was dropped. Shorten or split the "
                    f"message, or read large files in parts (read_file with offset/limit).")
        msg = (f"The context is full: {tokens:,} tokens, at or above the blocking limit of {b.blocking_limit:,} "
               f"(window {b.context_window:,}). Nothing was sent to the model. Run /compact — optionally with a "
               "focus, e.g. `/compact the failing parser test` — to summarise the conversation, then send your "
               "message again.")
        stopped = self.auto_compact_stopped()
        if stopped:
            msg += f" {stopped}"
        return msg

    def _observe(self, entries: Sequence[Entry]) -> None:
        """Let stages that keep running notes (session memory) see the new entries, every turn."""
        for stage in self.stages:
            observe = getattr(stage, "observe", None)
            if observe is not None:
                observe(entries, self.state)

