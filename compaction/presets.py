"""Named engine policies: one definition each, used by the live loop (`--policy NAME`,
`CTXTUI_POLICY`) and by `ctxtui replay`, so a user can run a preset in a session and replay a log
under it and compare like with like.

A preset switches layers off and sets their knobs; it never switches on what the user's own settings
turned off (`--disable-collapse`, `--disable-autocompact` still hold). It may set the budget's buffers
(`budget`: ContextBudget fields); a user's `--autocompact-pct` still moves the threshold.

- `ctxtui` (the default): every layer, each rewrite of the cached prefix only when it pays.
- `cc`: Claude Code's pipeline as its reference documents describe it: the tool-result budget,
  time-based microcompact (after 60 minutes without a response, every tool result cleared but the
  last 5) and the LLM summary at the auto-compact threshold, with the recent prompts kept and up to
  5 recently read files re-attached. No snip, no count-based clearing, no collapse, no session
  notes, no dollar rule. Its thresholds are Claude Code 2.1.328's at every window (`CLAUDE_CODE`):
  effective window W − min(max output, 20,000), auto-compact 13,000 under it, warning and error
  20,000 under that, blocking 3,000 under the effective window (67,000 at a 100,000 window); under
  100,000, which Claude Code does not accept, the default buffers scaled to the window.
- `cc-reactive`: `cc` as Claude Code 2.1.328 runs headless with default settings: no summary at
  the threshold and no local blocking limit; the request goes out whatever its size, and the API's
  prompt-too-long answer runs the one reactive compaction before it is sent again.
- `summary`: only the LLM summary at the threshold (and the tool-result budget).
- `none`: nothing compacts; a request over the window is refused by the blocking limit.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, TypeVar

if TYPE_CHECKING:     # data only at run time: the CLI's --help lists the presets without loading the engine
    from compaction.layer_context import PipelineConfig
    from compaction.summarizing import SummarizeConfig

DEFAULT_PRESET = "ctxtui"

# Claude Code 2.1.328's buffers, in tokens at every window (its autoCompact thresholds; its max
# output is 32,000, so the reserve is 20,000): ContextBudget fields.
CLAUDE_CODE: Mapping[str, int] = {"output_reserve": 20_000, "autocompact_buffer": 13_000, "warning_buffer": 20_000,
                                  "error_buffer": 20_000, "blocking_buffer": 3_000,
                                  # Claude Code refuses a window under 100k (CLAUDE_CODE_AUTO_COMPACT_WINDOW):
                                  # below it the figures describe nothing real, and ctxtui's scaled ones apply
                                  "buffers_min_window": 100_000}

_NO_CHEAP_LAYERS = {"snip_enabled": False, "microcompact_enabled": False, "time_based_enabled": False,
                    "collapse_enabled": False, "cache_aware": False, "early_compaction": False}


@dataclass(frozen=True)
class Preset:
    name: str
    about: str                                   # one line for --help and the docs
    pipeline: Mapping[str, Any] = field(default_factory=dict)    # PipelineConfig fields it sets
    summarize: Mapping[str, Any] = field(default_factory=dict)   # SummarizeConfig fields it sets
    budget: Mapping[str, Any] = field(default_factory=dict)      # ContextBudget fields it sets (buffers)
    autocompact: bool = True                     # False: no summary stage runs, at the threshold or on overflow


_CC_PIPELINE = {**_NO_CHEAP_LAYERS, "microcompact_enabled": True, "micro_count_enabled": False,
                "time_based_enabled": True, "time_gap_minutes": 60.0, "time_keep_recent": 5}

PRESETS: dict[str, Preset] = {p.name: p for p in (
    Preset("ctxtui", "every layer; a rewrite of the cached prefix only when it pays (the default)"),
    Preset("cc", "Claude Code's pipeline: tool-result budget, 60-minute time-based clearing keeping the last 5 "
                 "results, the LLM summary at Claude Code's threshold (window - 20k - 13k)",
           pipeline=_CC_PIPELINE, summarize={"session_memory": False}, budget=CLAUDE_CODE),
    Preset("cc-reactive", "cc as Claude Code runs headless by default: no summary at the threshold; the request "
                          "goes out, and the API's prompt-too-long answer runs the summary before a retry",
           pipeline={**_CC_PIPELINE, "proactive": False}, summarize={"session_memory": False}, budget=CLAUDE_CODE),
    Preset("summary", "only the LLM summary at the auto-compact threshold (and the tool-result budget)",
           pipeline=_NO_CHEAP_LAYERS, summarize={"session_memory": False}),
    Preset("none", "nothing compacts: the context grows until the blocking limit refuses a request",
           pipeline={**_NO_CHEAP_LAYERS, "tool_result_budget_enabled": False},
           summarize={"session_memory": False}, autocompact=False),
)}


class UnknownPreset(ValueError):
    """A name that is not a preset; the message lists the ones there are."""


def preset(name: str) -> Preset:
    try:
        return PRESETS[name]
    except KeyError:
        raise UnknownPreset(f"unknown policy {name!r}; use one of {', '.join(PRESETS)}") from None


Knobs = TypeVar("Knobs", "PipelineConfig", "SummarizeConfig")


def _with(config: Knobs, settings: Mapping[str, Any]) -> Knobs:
    """`config` with `settings`; a switch the config already turned off stays off."""
    changes: dict[str, Any] = {k: (v and getattr(config, k)) if isinstance(v, bool) else v
                               for k, v in settings.items()}
    return dataclasses.replace(config, **changes)


def budget_fields(name: str) -> dict[str, Any]:
    """The ContextBudget fields the preset sets (none: the default, scaled buffers)."""
    return dict(preset(name).budget)


def apply_preset(config: PipelineConfig, name: str) -> PipelineConfig:
    """The pipeline's knobs under the preset."""
    return _with(config, preset(name).pipeline)


def summarize_config(base: SummarizeConfig, name: str) -> SummarizeConfig:
    """The summarizing stages' knobs under the preset."""
    return _with(base, preset(name).summarize)
