"""What `ctxtui replay` was asked: the logs, the policies, the window and the cache TTL.

A policy is one of the engine's presets (`none`, `cc`, `summary`, `ctxtui` always; the others, such
as `cc-reactive`, when named: compaction/presets.py, the same ones `--policy` runs live), or a user
variant written `NAME:KEY=VALUE,...` where each KEY is one of the loop's own settings (the CTXTUI_*
variables of agent_core/config.py, CTXTUI_POLICY included), parsed by the loop's own parser, so a
replayed setting means exactly what it means in a session. Only settings that change the engine are
accepted.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compaction.accounting.cache_model import TTL_SECONDS
from compaction.presets import PRESETS

from agent_core.config import SETTINGS, Setting
from agent_core.replay.policy_server import SERVER

BUILTIN = ("none", "cc", "summary", "ctxtui")     # the presets, the baseline first, the default last
MIN_WINDOW = 1_000
# The loop's settings that change what the engine does (the others — keys, timeouts, theme — do not).
ENGINE_SETTINGS = ("context_window", "max_output_tokens", "autocompact_pct", "disable_autocompact",
                   "disable_collapse", "cache_ttl", "microcompact", "policy")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,39}$")


class ReplayUsageError(ValueError):
    """A bad argument: the message names what is wrong and how to write it (exit 2)."""


@dataclass(frozen=True)
class PolicySpec:
    """One policy to replay: a preset, or a preset (ctxtui unless CTXTUI_POLICY names another) with
    some settings changed (`settings` maps a Config field name to its parsed value; `raw` keeps
    what the user wrote)."""
    name: str
    base: str = "ctxtui"
    settings: dict[str, Any] = field(default_factory=dict)
    raw: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ReplayOptions:
    paths: tuple[Path, ...]
    policies: tuple[PolicySpec, ...] = tuple(PolicySpec(n, n) for n in BUILTIN)
    window: int | None = None          # None: each log's model's own window
    ttl: str = "5m"
    json: bool = False

    def policy_names(self) -> list[str]:
        return [p.name for p in self.policies]


def engine_settings() -> dict[str, Setting]:
    """The settings a variant may set, by variable name (those this version of the loop has)."""
    return {s.env: s for s in SETTINGS if s.env and s.name in ENGINE_SETTINGS}


def parse_policy(text: str) -> PolicySpec:
    """A preset's name, or `NAME:CTXTUI_X=VALUE,CTXTUI_Y=VALUE`."""
    name, sep, rest = text.partition(":")
    name = name.strip()
    if not sep:
        if name in BUILTIN or name == SERVER or name in PRESETS:   # server, other presets: by name only
            return PolicySpec(name, name)
        raise ReplayUsageError(f"--policy {text!r}: unknown policy; use one of {', '.join(PRESETS)}, {SERVER} "
                               f"(an estimate of the server engine), or a variant "
                               f"NAME:KEY=VALUE,... such as ctxtui-1h:CTXTUI_CACHE_TTL=1h")
    if name in (*BUILTIN, *PRESETS, SERVER) or not _NAME.match(name):
        raise ReplayUsageError(f"--policy {text!r}: a variant needs its own name (letters, digits, - _ . +; not "
                               f"{', '.join(BUILTIN)}) before the colon")
    known = engine_settings()
    settings: dict[str, Any] = {}
    raw: dict[str, str] = {}
    for item in (p.strip() for p in rest.split(",")):
        if not item:
            continue
        key, eq, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not eq or not value:
            raise ReplayUsageError(f"--policy {name}: {item!r} must be KEY=VALUE, e.g. CTXTUI_DISABLE_COLLAPSE=1")
        setting = known.get(key)
        if setting is None:
            raise ReplayUsageError(f"--policy {name}: {key} is not a setting that changes compaction; use one of "
                                   f"{', '.join(sorted(known))}")
        try:
            settings[setting.name] = setting.parse(value)
        except (ValueError, TypeError):
            raise ReplayUsageError(f"--policy {name}: {key} must be {setting.form} (got {value!r})") from None
        raw[key] = value
    if not settings:
        raise ReplayUsageError(f"--policy {name}: a variant sets at least one KEY=VALUE after the colon")
    return PolicySpec(name, str(settings.get("policy", "ctxtui")), settings, raw)


def make_options(paths: list[str], policies: list[str] | None = None, window: int | None = None,
                 ttl: str = "5m", json: bool = False) -> ReplayOptions:
    """Checked options. The built-in policies are always present; `--policy` adds variants (naming a
    built-in again changes nothing)."""
    if not paths:
        raise ReplayUsageError("name at least one log file or folder to replay")
    checked = []
    for p in paths:
        path = Path(p).expanduser()
        if not path.exists():
            raise ReplayUsageError(f"{p}: no such file or folder")
        if not (path.is_file() or path.is_dir()):
            raise ReplayUsageError(f"{p}: not a regular file or a folder")
        checked.append(path)
    if window is not None and (isinstance(window, bool) or window < MIN_WINDOW):
        raise ReplayUsageError(f"--window must be a whole number of tokens >= {MIN_WINDOW:,} (got {window})")
    if ttl not in TTL_SECONDS:
        raise ReplayUsageError(f"--ttl must be one of {', '.join(TTL_SECONDS)} (got {ttl!r})")
    specs = [PolicySpec(n, n) for n in BUILTIN]
    for text in policies or ():
        spec = parse_policy(text)
        if spec.name in BUILTIN:
            continue
        if any(s.name == spec.name for s in specs):
            raise ReplayUsageError(f"--policy {spec.name}: named twice")
        specs.append(spec)
    return ReplayOptions(tuple(checked), tuple(specs), window, ttl, json)
