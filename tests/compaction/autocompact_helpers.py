"""Sessions and a scripted summarizer for the summarizing layers (autocompact, session memory, PTL,
the breakers): a pipeline over them with a small window."""
from __future__ import annotations

from pathlib import Path

from compaction import (ContextBudget, Entry, Pipeline, PipelineConfig, SummarizeConfig, SummaryResult,
                        assistant, default_stages, tool_result_block, user)
from compaction.layers.autocompact import AutoCompactStage

SUMMARY = ("<analysis>Going through it in order: the user wants the parser fixed.</analysis>\n"
           "<summary>1. Primary request and intent: fix the parser bug.\n9. Next step: run the tests.</summary>")
WINDOW = 20_000   # threshold 16,700, blocking 17,700; scaled: recent users 2,000, files 500 each, 5,000 total


class ScriptedSummarizer:
    """Answers from a script: a string is the summary text, an exception is raised; the last item
    repeats. Every request is recorded."""

    def __init__(self, *script) -> None:
        self.script = list(script) or [SUMMARY]
        self.calls: list[dict] = []

    async def summarize(self, messages, *, instructions):
        self.calls.append({"messages": messages, "instructions": instructions})
        item = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        if isinstance(item, BaseException):
            raise item
        return SummaryResult(item, {"input_tokens": 1_000, "output_tokens": 200}, "scripted-model")


def session(rounds: int, chars: int = 2_000, first: str = "Please fix the parser bug in src/parser.py") -> list[Entry]:
    """A user request, then rounds of: read a file, comment on it, the user asks for the next one."""
    es = [user(first)]
    for r in range(rounds):
        tid = f"toolu_{r:04d}"
        es.append(assistant([{"type": "text", "text": f"I'll read file {r}."},
                             {"type": "tool_use", "id": tid, "name": "read_file", "input": {"path": f"src/f{r}.py"}}],
                            response_id=f"msg_{r}a"))
        es.append(user([tool_result_block(tid, f"# file {r}\n" + "x" * chars)]))
        es.append(assistant(f"File {r} looks fine.", response_id=f"msg_{r}b"))
        es.append(user(f"Now check file {r + 1}, please."))
    return es


def make_pipeline(tmp_path: Path | None, summarizer, *, window: int = WINDOW, config: SummarizeConfig | None = None,
                  read_file=None, llm_only: bool = False, extra: dict | None = None) -> Pipeline:
    cfg = PipelineConfig(budget=ContextBudget(context_window=window), extra=dict(extra or {}))
    if llm_only:
        stages = [AutoCompactStage(summarizer, config, read_file)]
    else:
        stages = default_stages(summarizer, config, read_file)
    return Pipeline(cfg, tmp_path, stages, layers=([], []))
