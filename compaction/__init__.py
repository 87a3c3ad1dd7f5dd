"""The compaction engine: pure Python, no model client, no UI (see docs/architecture.md).

The public names load on first use (PEP 562), so importing one small module of the package —
`compaction.transcript` for the state folder's checks, say — does not load the whole engine; the
status line runs on every refresh of Claude Code's prompt and pays for every import.
"""
from __future__ import annotations

import importlib

TYPE_CHECKING = False    # typing stays unloaded at run time: 3 ms of every status line call
if TYPE_CHECKING:
    from typing import Any

_WHERE = {
    "STATES": "accounting.budget", "ContextBudget": "accounting.budget",
    "Entry": "entry", "assistant": "entry", "boundary": "entry", "project": "entry",
    "tool_result_block": "entry", "user": "entry",
    "CompactionStage": "layer_context", "LayerContext": "layer_context", "PipelineConfig": "layer_context",
    "PipelineState": "layer_context",
    "Pipeline": "pipeline", "PipelineResult": "pipeline",
    "CompactionReport": "report", "LayerResult": "report",
    "group_by_api_round": "rounds", "round_starts": "rounds",
    "breakdown": "accounting.tokens", "count_tokens": "accounting.tokens", "estimate_message": "accounting.tokens",
    "estimate_text": "accounting.tokens",
    "read_transcript": "transcript", "write_transcript": "transcript",
    "validate_history": "validate",
    "default_stages": "stages",
    "SummarizeConfig": "summarizing",
    "BreakerConfig": "breakers",
    "SummarizeError": "summarizer", "Summarizer": "summarizer", "SummaryResult": "summarizer",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    try:
        module = _WHERE[name]
    except KeyError:
        raise AttributeError(f"module 'compaction' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_WHERE])
