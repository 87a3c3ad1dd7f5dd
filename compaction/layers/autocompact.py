"""LLM compaction (pipeline layers 6–8: auto, manual, reactive): the history is replaced by a model-written summary.

Order of work, so that nothing is ever lost and no money is spent on a doomed attempt:
transcript on disk first (if that fails, stop), then the summary call (prompt-too-long → shed the
oldest tool output, then older rounds, never an earlier summary or a user's words, and retry, at
most 3 times: `ptl.shed_for_retry`; an answer that calls a tool is a failed attempt), then the new
history — boundary, summary that points to the transcript, the recent user messages verbatim,
re-attached recently read files and, for an automatic compaction in the middle of a turn, that
turn verbatim — which is applied only if it is valid and smaller than the old one. The summary
call shares the main call's prefix (system prompt, tools, `tool_choice`, the conversation as
sent), so the conversation is a cache read, not a second write.
"""
from __future__ import annotations

import time
from dataclasses import replace
from typing import Any, Sequence

from compaction.breakers import rejected_report
from compaction.entry import Entry, boundary, project, tool_result_block, user
from compaction.layer_context import LayerContext
from compaction.layers.ptl import Trimmed, is_prompt_too_long, is_retry_marker, shed_for_retry, token_gap
from compaction.layers.session_memory import current_round
from compaction.reinject import ReadFile, reinject
from compaction.rounds import newest_round_tokens
from compaction.report import CompactionReport, LayerResult
from compaction.summarizer import SummarizeError, Summarizer, SummaryResult
from compaction.summarizing import SummarizeConfig, check_new_history, failed, reanchor, save_transcript
from compaction.summary_prompt import build_summary_prompt, format_summary, looks_like_error, summary_message
from compaction.accounting.tokens import count_tokens


# --- the summary request -----------------------------------------------------------------------

def summary_request(entries: Sequence[Entry], instructions: str | None) -> list[dict[str, Any]]:
    """The conversation exactly as the main call sends it (so the summary call reads it from the
    prompt cache), then the summary prompt as the last user message: merged into a trailing user
    message, else a new one. Calls the last assistant left unanswered get a placeholder result, so
    tool pairs stay whole and roles alternate. The entries' messages are never mutated."""
    msgs = [{"role": m["role"], "content": list(m["content"])} for m in project(entries)]
    prompt = {"type": "text", "text": build_summary_prompt(instructions)}
    if not msgs or msgs[-1]["role"] == "assistant":
        pending = [b["id"] for b in msgs[-1]["content"] if b.get("type") == "tool_use"] if msgs else []
        results = [tool_result_block(i, "[not run: the conversation is being summarised]") for i in pending]
        msgs.append({"role": "user", "content": results + [prompt]})
    else:
        msgs[-1] = {"role": "user", "content": msgs[-1]["content"] + [prompt]}
    return msgs


def recent_user_messages(entries: Sequence[Entry], budget: int) -> list[Entry]:
    """The user's own recent messages (text only, no tool results), newest first until `budget`
    tokens, returned in their original order. A message that overflows is cut to the room left."""
    picked: list[Entry] = []
    used = 0
    for e in reversed(entries):
        if e.kind != "message" or e.role != "user" or not e.sent or is_retry_marker(e):
            continue
        texts = [b for b in e.content if b.get("type") == "text" and str(b.get("text", "")).strip()]
        if not texts:
            continue
        kept = e if len(texts) == len(e.content) else e.with_content(texts)
        if used + kept.tokens <= budget:
            picked.append(kept)
            used += kept.tokens
            continue
        room = budget - used
        if room >= 100:
            text = "\n".join(b["text"] for b in texts)
            chars = max(0, (room - 20) * 4)
            cut = e.with_content([{"type": "text", "text": text[:chars] + "\n[... message cut to fit]"}],
                                 cut_for_compaction=True)
            if cut.tokens <= room:
                picked.append(cut)
        break
    return picked[::-1]


def split_turn(entries: Sequence[Entry]) -> tuple[list[Entry], list[Entry]] | None:
    """(before, turn) when a turn is in progress: the newest user prompt has been answered by at
    least one assistant message (tool calls made, results in or pending). `turn` is that prompt and
    every sent entry after it, verbatim; `before` is everything older — with the tool results that
    answer the last call before the prompt, when they share its user message, so no pair is split.
    None when no turn is in progress (no prompt, or nothing answered it yet)."""
    _, p = current_round(entries)
    if p is None or not any(e.sent and e.role == "assistant" for e in entries[p + 1:]):
        return None
    before, turn = list(entries[:p]), []
    leading = True          # the user entries before the turn's first answer
    for e in entries[p:]:
        if not e.sent:
            continue
        if e.role == "assistant":
            leading = False
        elif leading and e.tool_result_ids():
            results = [b for b in e.content if b.get("type") == "tool_result"]
            before.append(e.with_content(results))
            rest = [b for b in e.content if b.get("type") != "tool_result"]
            if rest:
                turn.append(e.with_content(rest))
            continue
        turn.append(e)
    return before, turn


def _turn_kept(to_summarize: list[Entry], ctx: LayerContext) -> tuple[list[Entry], list[Entry], str | None]:
    """(what to summarise, the turn kept verbatim, why the turn in progress was not kept). An
    automatic or reactive compaction in the middle of a turn keeps that turn after the summary, so
    it continues without redoing its tool calls — unless it is over half of the smaller of the
    auto-compact threshold and the count less the system prompt and tools (the compaction would
    free too little), or no message precedes it."""
    if ctx.trigger == "manual":
        return to_summarize, [], None
    split = split_turn(to_summarize)
    if split is None:
        return to_summarize, [], None
    before, turn = split
    cal = ctx.config.count_ratio
    tokens = round(cal.ratio * cal.weighted(turn))
    limit = min(ctx.budget.autocompact_threshold, ctx.tokens - ctx.config.overhead_tokens) // 2
    if not any(e.sent and e.kind == "message" for e in before):
        return to_summarize, [], "nothing precedes the turn in progress, so it was summarised too"
    if tokens > limit:
        return to_summarize, [], (f"the turn in progress ({tokens:,} tokens) is over the {limit:,} that may be "
                                  "kept verbatim, so it was summarised too")
    if check_new_history([user("summary"), *turn]) or check_new_history(before):
        return to_summarize, [], "the turn in progress could not be cut out whole, so it was summarised too"
    return before, turn, None


# --- the stage ---------------------------------------------------------------------------------

class AutoCompactStage:
    """LLM compaction; used for auto (after session memory declined), manual and reactive triggers."""

    name = "autocompact"

    def __init__(self, summarizer: Summarizer, config: SummarizeConfig | None = None,
                 read_file: ReadFile | None = None) -> None:
        self.summarizer = summarizer
        self.config = config or SummarizeConfig()
        self.read_file = read_file

    async def __call__(self, entries: list[Entry], ctx: LayerContext) -> LayerResult | None:
        t0 = time.monotonic()
        cfg, window = self.config, ctx.budget.context_window
        to_summarize = [e for e in entries if e.sent]
        if not to_summarize:
            return None
        if ctx.trigger != "manual" and \
                newest_round_tokens(entries, ctx.config.overhead_tokens) >= ctx.budget.blocking_limit:
            return None     # the newest round alone cannot fit: no summary makes room, and none may cut it
        to_summarize, turn, turn_why = _turn_kept(to_summarize, ctx)

        path, why = save_transcript(ctx, entries, cfg.require_transcript)
        if why:
            return failed(self.name, ctx, why, entries, t0)

        # The summary call; on prompt-too-long, shed tool output (then older rounds) and retry.
        attempt, retries, shed = to_summarize, 0, Trimmed([])
        while True:
            request = summary_request(attempt, ctx.instructions)
            error: SummarizeError | None = None
            try:
                result = await self.summarizer.summarize(request, instructions=ctx.instructions)
                if result.text.lstrip().lower().startswith("prompt is too long"):
                    error = SummarizeError(result.text[:500], prompt_too_long=True)
            except SummarizeError as exc:
                error = exc
            if error is None:
                break
            shed_details = _shed_details(retries, shed)
            if not (error.prompt_too_long or is_prompt_too_long(error.message)):
                kind = "transport error" if error.transport else "error"
                return failed(self.name, ctx, f"the summary call failed ({kind}: {error.message})", entries, t0,
                              transport=error.transport, transcript_path=path, **shed_details)
            if retries >= cfg.max_ptl_retries:
                return failed(self.name, ctx, f"the summary request was still too long after {retries} retries "
                              f"({_shed_text(shed)})", entries, t0, transcript_path=path, **shed_details)
            trimmed = shed_for_retry(attempt, token_gap(error.message), cfg.ptl_fallback_fraction)
            if trimmed is None:
                return failed(self.name, ctx, "the summary request is too long even with all tool output left out, "
                              "every older round dropped and every very long user message cut to its head and "
                              "tail: the earlier summaries and the user's messages alone do not fit, and they are "
                              "never dropped", entries, t0, transcript_path=path, **shed_details)
            attempt, retries, shed = trimmed.entries, retries + 1, shed.plus(trimmed)

        summary = format_summary(result.text)
        if looks_like_error(summary):
            what = ("the summary was empty" if not summary.strip()
                    else f"the summary looks like an error ({summary[:80]!r})")
            return LayerResult(entries, _rejected(self.name, what, ctx, ctx.tokens, path, result))

        # The new history: the summary, the recent user messages, re-attached files, the turn in progress.
        auto = ctx.trigger != "manual"
        recent = recent_user_messages(to_summarize, cfg.limit("recent_user_tokens", window))
        files = await reinject(entries, [*recent, *turn], read_file=self.read_file, max_files=cfg.reinject_files,
                               file_tokens=cfg.limit("reinject_file_tokens", window),
                               total_tokens=cfg.limit("reinject_total_tokens", window))
        note = user(summary_message(summary, path, recent_kept=bool(recent or turn), auto=auto), kind="summary",
                    layer=self.name, transcript_path=path)
        overhead = ctx.config.overhead_tokens
        body = reanchor([note, *recent, *files, *turn], overhead, ctx.config.count_ratio)
        after = count_tokens(body, overhead, ctx.config.count_ratio)
        if after >= ctx.tokens:
            return LayerResult(entries, _rejected(
                self.name, f"the result would not be smaller ({ctx.tokens:,} → {after:,} tokens)", ctx, after,
                path, result))
        new = [boundary(ctx.trigger, ctx.tokens, after, path, self.name), *body]
        problems = check_new_history(new)
        if problems:
            return failed(self.name, ctx, f"internal error: the new history would be invalid ({problems[0]})",
                          entries, t0, transcript_path=path)
        report = CompactionReport(
            layer=self.name, trigger=ctx.trigger,
            action=(f"Summarised {len(to_summarize)} messages ({ctx.tokens:,} → {after:,} tokens); kept "
                    f"{len(recent)} recent user messages"
                    + (f" and the turn in progress ({len(turn)} messages) verbatim" if turn else "")
                    + f", re-attached {len(files)} files"
                    + (f"; to fit the summary request, {_shed_text(shed)}" if retries else "")
                    + (f"; {turn_why}" if turn_why else "")),
            tokens_before=ctx.tokens, tokens_after=after, duration_s=time.monotonic() - t0,
            transcript_path=path,
            details={"summary_tokens": note.tokens, "kept_user_messages": len(recent),
                     "kept_turn_messages": len(turn), "kept_turn_tokens": sum(e.tokens for e in turn),
                     "turn_not_kept": turn_why,
                     "files": [f.meta["path"] for f in files], **_shed_details(retries, shed),
                     "usage": dict(result.usage), "model": result.model,
                     "instructions": ctx.instructions})
        return LayerResult(new, report)


def _shed_details(retries: int, shed: Trimmed) -> dict[str, int]:
    return {"ptl_retries": retries, "cleared_tool_results": shed.cleared_results,
            "cleared_tokens": shed.cleared_tokens, "dropped_rounds": shed.dropped_rounds,
            "dropped_tokens": shed.dropped_tokens, "shortened_user_messages": shed.shortened_messages,
            "shortened_tokens": shed.shortened_tokens}


def _shed_text(shed: Trimmed) -> str:
    parts = [f"{shed.cleared_results} tool outputs left out ({shed.cleared_tokens:,} tokens)"]
    if shed.dropped_rounds:
        parts.append(f"{shed.dropped_rounds} older rounds dropped ({shed.dropped_tokens:,} tokens), their summaries "
                     "and user messages kept")
    if shed.shortened_messages:
        parts.append(f"{shed.shortened_messages} very long user messages kept by head and tail "
                     f"({shed.shortened_tokens:,} tokens)")
    return "; ".join(parts)


def _rejected(stage: str, why: str, ctx: LayerContext, proposed: int, path: str | None,
              result: SummaryResult) -> CompactionReport:
    r = rejected_report(stage, why, ctx.trigger, ctx.tokens, proposed)
    return replace(r, transcript_path=path, details={**r.details, "usage": dict(result.usage), "model": result.model})
