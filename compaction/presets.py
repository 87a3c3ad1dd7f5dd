"""Named engine policies: one definition each, used by the live loop (`--policy NAME`,
`CTXTUI_POLICY`) and by `ctxtui replay`, so a user can run a preset in a session and replay a log
under it and compare like with like.

A preset switches layers off and sets their knobs; it never switches on what the user's own settings
turned off (`--no-collapse`, `--disable-autocompact` still hold), and the thresholds stay the
budget's (the auto-compact threshold, `--autocompact-pct`).

- `ctxtui` (the default): every layer, each rewrite of the cached prefix only when it pays.
- `cc`: Claude Code's pipeline as its reference documents describe it: the tool-result budget,
  time-based microcompact (after 60 minutes without a response, every tool result cleared but the
  last 5) and the LLM summary at the auto-compact threshold, with the recent prompts kept and up to
  5 recently read files re-attached. No snip, no count-based clearing, no collapse, no session
  notes, no dollar rule.
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

_NO_CHEAP_LAYERS = {"snip_enabled": False, "microcompact_enabled": False, "time_based_enabled": False,
                    "collapse_enabled": False, "cache_aware": False, "early_compaction": False}


@dataclass(frozen=True)
class Preset:
    name: str
    about: str                                   # one line for --help and the docs
    pipeline: Mapping[str, Any] = field(default_factory=dict)    # PipelineConfig fields it sets
    summarize: Mapping[str, Any] = field(default_factory=dict)   # SummarizeConfig fields it sets
    autocompact: bool = True                     # False: no summary stage runs, at the threshold or on overflow


PRESETS: dict[str, Preset] = {p.name: p for p in (
    Preset("ctxtui", "every layer; a rewrite of the cached prefix only when it pays (the default)"),
    Preset("cc", "Claude Code's pipeline: tool-result budget, 60-minute time-based clearing keeping the last 5 "
                 "results, the LLM summary at the threshold",
           pipeline={**_NO_CHEAP_LAYERS, "microcompact_enabled": True, "micro_count_enabled": False,
                     "time_based_enabled": True, "time_gap_minutes": 60.0, "time_keep_recent": 5},
           summarize={"session_memory": False}),
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


def apply_preset(config: PipelineConfig, name: str) -> PipelineConfig:
    """The pipeline's knobs under the preset."""
    return _with(config, preset(name).pipeline)


def summarize_config(base: SummarizeConfig, name: str) -> SummarizeConfig:
    """The summarizing stages' knobs under the preset."""
    return _with(base, preset(name).summarize)
