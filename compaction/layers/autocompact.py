"""LLM compaction (pipeline layers 6–8: auto, manual, reactive): the history is replaced by a model-written summary.

Order of work, so that nothing is ever lost and no money is spent on a doomed attempt:
transcript on disk first (if that fails, stop), then the summary call (prompt-too-long → trim the
oldest rounds and retry, at most 3 times; an answer that calls a tool is a failed attempt), then
the new history — boundary, summary that points to the transcript, the recent user messages
verbatim, re-attached recently read files — which is applied only if it is valid and smaller than
the old one. The summary call shares the main call's prefix (system prompt, tools, `tool_choice`,
the conversation as sent), so the conversation is a cache read, not a second write.
"""
from __future__ import annotations

import time
from dataclasses import replace
from typing import Any, Sequence

from compaction.breakers import rejected_report
from compaction.entry import Entry, boundary, project, tool_result_block, user
from compaction.layer_context import LayerContext
from compaction.layers.ptl import is_prompt_too_long, is_retry_marker, token_gap, truncate_for_retry
from compaction.reinject import ReadFile, reinject
from compaction.report import CompactionReport, LayerResult
from compaction.summarizer import SummarizeError, Summarizer, SummaryResult
from compaction.summarizing import SummarizeConfig, check_new_history, failed, save_transcript
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

        path, why = save_transcript(ctx, entries, cfg.require_transcript)
        if why:
            return failed(self.name, ctx, why, entries, t0)

        # The summary call, trimming the oldest rounds on prompt-too-long.
        attempt, retries, dropped_rounds = to_summarize, 0, 0
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
            if not (error.prompt_too_long or is_prompt_too_long(error.message)):
                kind = "transport error" if error.transport else "error"
                return failed(self.name, ctx, f"the summary call failed ({kind}: {error.message})", entries, t0,
                              transport=error.transport, transcript_path=path, ptl_retries=retries)
            if retries >= cfg.max_ptl_retries:
                return failed(self.name, ctx, f"the summary request was still too long after {retries} retries "
                              "that dropped the oldest rounds", entries, t0, transcript_path=path,
                              ptl_retries=retries)
            trimmed = truncate_for_retry(attempt, token_gap(error.message), cfg.ptl_fallback_fraction)
            if trimmed is None:
                return failed(self.name, ctx, "the summary request is too long and has no older rounds left "
                              "to drop", entries, t0, transcript_path=path, ptl_retries=retries)
            attempt, retries = trimmed.entries, retries + 1
            dropped_rounds += trimmed.dropped_rounds

        summary = format_summary(result.text)
        if looks_like_error(summary):
            what = ("the summary was empty" if not summary.strip()
                    else f"the summary looks like an error ({summary[:80]!r})")
            return LayerResult(entries, _rejected(self.name, what, ctx, ctx.tokens, path, result))

        # The new history.
        auto = ctx.trigger != "manual"
        recent = recent_user_messages(to_summarize, cfg.limit("recent_user_tokens", window))
        files = await reinject(entries, recent, read_file=self.read_file, max_files=cfg.reinject_files,
                               file_tokens=cfg.limit("reinject_file_tokens", window),
                               total_tokens=cfg.limit("reinject_total_tokens", window))
        note = user(summary_message(summary, path, recent_kept=bool(recent), auto=auto), kind="summary",
                    layer=self.name, transcript_path=path)
        body = [note, *recent, *files]
        after = count_tokens(body, ctx.config.overhead_tokens, ctx.config.count_ratio)
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
                    f"{len(recent)} recent user messages and re-attached {len(files)} files"),
            tokens_before=ctx.tokens, tokens_after=after, duration_s=time.monotonic() - t0,
            transcript_path=path,
            details={"summary_tokens": note.tokens, "kept_user_messages": len(recent),
                     "files": [f.meta["path"] for f in files], "ptl_retries": retries,
                     "dropped_rounds": dropped_rounds, "usage": dict(result.usage), "model": result.model,
                     "instructions": ctx.instructions})
        return LayerResult(new, report)


def _rejected(stage: str, why: str, ctx: LayerContext, proposed: int, path: str | None,
              result: SummaryResult) -> CompactionReport:
    r = rejected_report(stage, why, ctx.trigger, ctx.tokens, proposed)
    return replace(r, transcript_path=path, details={**r.details, "usage": dict(result.usage), "model": result.model})
