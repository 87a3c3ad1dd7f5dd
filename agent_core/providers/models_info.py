"""Context window and max output per model: what the thresholds (compaction/accounting/budget.py) start from.

The window comes from genai-prices' offline model data (it knows each Claude model's
`context_window`); it has no max-output figure, so that comes from a small table of Claude
families. Both are overridable (CTXTUI_CONTEXT_WINDOW / CTXTUI_MAX_OUTPUT_TOKENS), and an
unknown model falls back to the defaults below (200,000 and 32,000) instead of failing.

One rule for the window of a model whose 1M-token context is opt-in (Opus 4.6, Sonnet 4.6,
Sonnet 4.5 and 4; genai-prices lists the 4.6 models at 1,000,000): 200,000 unless the 1M context
is on. For ctxtui that is a setting (CTXTUI_1M_CONTEXT=1, `--1m-context`), which also sends the
API's 1M beta header (`LONG_CONTEXT_BETA`); for a log, a model id with Claude Code's `[1m]` suffix
or a logged context above 200,000 (`window_from_log`). The loop, watch, statusline, usage and
replay all ask `model_limits`.
"""
from __future__ import annotations

from collections import namedtuple

from agent_core.pricing import rates_table
from agent_core.pricing.cost import context_window as _genai_window


def data_window(model: str) -> int | None:
    """genai-prices' window for `model`: from the shipped table when it holds the model (no import
    of genai-prices), else from its data."""
    windows = rates_table.load()[1]
    return windows[model] if model in windows else _genai_window(model)


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

STANDARD_WINDOW = 200_000
LONG_WINDOW = 1_000_000
LONG_CONTEXT_BETA = "context-1m-2025-08-07"
LONG_SUFFIX = "[1m]"                 # Claude Code's model id suffix for a session on the 1M context
# Families whose 1M context is opt-in (longest prefix wins, as above).
OPT_IN_LONG_CONTEXT: tuple[str, ...] = ("claude-opus-4-6", "claude-sonnet-4-6", "claude-sonnet-4-5",
                                        "claude-sonnet-4-0", "claude-sonnet-4-2025")

# Used only when genai-prices does not know the model.
CONTEXT_BY_FAMILY: tuple[tuple[str, int], ...] = (
    ("claude-", DEFAULT_CONTEXT_WINDOW),
)


class ModelLimits(namedtuple("ModelLimits", "model context_window max_output_tokens window_source output_source")):
    """A model's window and max output, and where each came from. A named tuple, not a dataclass:
    the status line loads this module on every refresh (dataclasses costs 10 ms to import)."""
    __slots__ = ()
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


def base_model(model: str) -> tuple[str, bool]:
    """(the model id without Claude Code's `[1m]` suffix, whether it had it)."""
    if model.lower().endswith(LONG_SUFFIX):
        return model[: -len(LONG_SUFFIX)], True
    return model, False


def cache_model(model: str) -> str:
    """The model a prompt-cache entry belongs to (each model has its own cache): Claude Code's
    `[1m]` suffix is the same model."""
    return base_model(model or "")[0]


def has_opt_in_long_context(model: str) -> bool:
    """Is the 1M context of `model` opt-in (200k by default)?"""
    m = base_model(model)[0].lower()
    return any(m.startswith(p) for p in OPT_IN_LONG_CONTEXT)


def sends_long_context_beta(model: str, long_context: bool) -> bool:
    """Does a request for `model` carry the 1M beta header? Only when the user turned the 1M
    context on and the model's 1M context is opt-in."""
    return long_context and has_opt_in_long_context(model)


def window_from_log(model: str | None, largest_context: int = 0) -> bool:
    """Was a logged session on the 1M context? Its model id says `[1m]`, or a request held more
    than the standard window."""
    return bool(model and base_model(model)[1]) or largest_context > STANDARD_WINDOW


def model_limits(model: str, *, context_window: int | None = None,
                 max_output_tokens: int | None = None, long_context: bool = False) -> ModelLimits:
    """Window and max output for `model`; explicit values win over data and tables. `long_context`:
    the 1M context is on (the setting, or a log that shows it); a `[1m]` model id says so too."""
    model, suffixed = base_model(model)
    long_context = long_context or suffixed
    if context_window is not None:
        window, wsrc = int(context_window), "override"
    elif has_opt_in_long_context(model):
        window, wsrc = (LONG_WINDOW, "1M context on") if long_context else (STANDARD_WINDOW, "1M opt-in")
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
