"""Context window and max output per model: what the thresholds (compaction/accounting/budget.py) start from.

The window comes from genai-prices' offline model data (it knows each Claude model's
`context_window`); it has no max-output figure, so that comes from a small table of Claude
families. Both are overridable (CTXTUI_CONTEXT_WINDOW / CTXTUI_MAX_OUTPUT_TOKENS), and an
unknown model falls back to the defaults below (200,000 and 32,000) instead of failing.
"""
from __future__ import annotations

from dataclasses import dataclass

from agent_core.pricing.cost import context_window as data_window

DEFAULT_CONTEXT_WINDOW = 200_000
DEFAULT_MAX_OUTPUT = 32_000
DEFAULT_MODEL = "claude-sonnet-5-5"  # the model run with an API key and no setting: the newest Sonnet in
                                     # genai-prices' bundled data
DEMO_MODEL = "demo"                  # the offline demo model (providers/demo)
DEMO_CONTEXT_WINDOW = 30_000         # small, so compaction shows within a few prompts
DEMO_MAX_OUTPUT = 4_000

# Longest prefix wins, so list specific families before general ones. Figures are the documented
# synchronous (Messages API) output limits of each family.
MAX_OUTPUT_BY_FAMILY: tuple[tuple[str, int], ...] = (
    ("claude-opus-4-6", 128_000),
    ("claude-opus-4-5", 64_000),
    ("claude-opus-4-1", 32_000),
    ("claude-opus-4-0", 32_000),
    ("claude-opus-4-2", 32_000),      # claude-opus-4-20250514
    ("claude-4-opus", 32_000),
    ("claude-sonnet-4", 64_000),      # 4, 4-0, 4-5, 4-6, dated ids
    ("claude-4-sonnet", 64_000),
    ("claude-haiku-4", 64_000),
    ("claude-3-7-sonnet", 64_000),
    ("claude-3-5-sonnet", 8_192),
    ("claude-3-5-haiku", 8_192),
    ("claude-3-opus", 4_096),
    ("claude-3-sonnet", 4_096),
    ("claude-3-haiku", 4_096),
)

# Used only when genai-prices does not know the model.
CONTEXT_BY_FAMILY: tuple[tuple[str, int], ...] = (
    ("claude-", DEFAULT_CONTEXT_WINDOW),
)


@dataclass(frozen=True)
class ModelLimits:
    model: str
    context_window: int
    max_output_tokens: int
    window_source: str    # override | genai-prices | table | default
    output_source: str    # override | table | default


def _by_prefix(table: tuple[tuple[str, int], ...], model: str) -> int | None:
    m = model.lower()
    best: tuple[int, int] | None = None
    for prefix, value in table:
        if m.startswith(prefix) and (best is None or len(prefix) > best[0]):
            best = (len(prefix), value)
    return best[1] if best else None


def model_limits(model: str, *, context_window: int | None = None,
                 max_output_tokens: int | None = None) -> ModelLimits:
    """Window and max output for `model`; explicit values win over data and tables."""
    if context_window is not None:
        window, wsrc = int(context_window), "override"
    elif (w := data_window(model)) is not None:
        window, wsrc = w, "genai-prices"
    elif (w := _by_prefix(CONTEXT_BY_FAMILY, model)) is not None:
        window, wsrc = w, "table"
    else:
        window, wsrc = DEFAULT_CONTEXT_WINDOW, "default"
    if max_output_tokens is not None:
        out, osrc = int(max_output_tokens), "override"
    elif (o := _by_prefix(MAX_OUTPUT_BY_FAMILY, model)) is not None:
        out, osrc = o, "table"
    else:
        out, osrc = DEFAULT_MAX_OUTPUT, "default"
    return ModelLimits(model, window, out, wsrc, osrc)
