"""The compaction engine: pure Python, no model client, no UI (see docs/architecture.md)."""
from .budget import STATES, ContextBudget
from .entry import Entry, assistant, boundary, project, tool_result_block, user
from .layer_context import CompactionStage, LayerContext, PipelineConfig, PipelineState
from .pipeline import Pipeline, PipelineResult
from .report import CompactionReport, LayerResult
from .rounds import group_by_api_round, round_starts
from .tokens import breakdown, count_tokens, estimate_message, estimate_text
from .transcript import read_transcript, write_transcript
from .validate import validate_history
from .stages import default_stages
from .summarizing import SummarizeConfig
from .breakers import BreakerConfig
from .summarizer import SummarizeError, Summarizer, SummaryResult

__all__ = [
    "BreakerConfig", "SummarizeConfig", "SummarizeError", "Summarizer", "SummaryResult", "default_stages",
    "STATES", "CompactionReport", "CompactionStage", "ContextBudget", "Entry", "LayerContext", "LayerResult",
    "Pipeline", "PipelineConfig", "PipelineResult", "PipelineState", "assistant", "boundary", "breakdown",
    "count_tokens", "estimate_message", "estimate_text", "group_by_api_round", "project", "read_transcript",
    "round_starts", "tool_result_block", "user", "validate_history", "write_transcript",
]
