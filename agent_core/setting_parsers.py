"""The parsers of the settings table (agent_core/settings_table.py): each takes what a flag, a
variable, a `.env` line or a TOML value gave and returns the value `Config` holds, or raises
ValueError (TypeError, AttributeError) for a value of the wrong form. One parser per setting,
whatever the source: `--context-window 50_000` and `CTXTUI_CONTEXT_WINDOW=50_000` mean the same."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable, Mapping

from agent_core.tool_spec import TOOL_NAMES, is_mcp_name

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}
BOOLEAN_FORM = "a boolean (1/0, true/false, yes/no, on/off)"


def text(v: Any) -> str:
    if not isinstance(v, str) or not v.strip():
        raise ValueError
    return v.strip()


def whole_number_at_least(lo: int) -> Callable[[Any], int]:
    """Digits, with `_` or `,` between them allowed in text (`200_000`, `200,000`)."""
    def parse(v: Any) -> int:
        if isinstance(v, bool):
            raise ValueError
        if isinstance(v, str):
            v = int(v.strip().replace("_", "").replace(",", ""))
        if not isinstance(v, int) or v < lo:
            raise ValueError
        return v
    return parse


def number(v: Any) -> float:
    if isinstance(v, bool):
        raise ValueError
    if isinstance(v, str):
        v = float(v.strip())
    if not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ValueError
    return float(v)


def positive(v: Any) -> float:
    f = number(v)
    if f <= 0:
        raise ValueError
    return f


def percent(v: Any) -> float:
    """In (0, 100]; a trailing `%` is allowed."""
    f = number(v.strip().rstrip("%") if isinstance(v, str) else v)
    if not 0 < f <= 100:
        raise ValueError
    return f


def boolean(v: Any) -> bool:
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v.strip().lower() in _TRUE | _FALSE:
        return v.strip().lower() in _TRUE
    raise ValueError


def url(v: Any) -> str:
    """http:// or https://, without its trailing slash. (A URL may hold user:password@: an error
    message never shows one, see config._parse.)"""
    s = text(v)
    if not s.startswith(("http://", "https://")) or len(s) <= len("https://"):
        raise ValueError
    return s.rstrip("/")


def path(v: Any) -> Path:
    if isinstance(v, Path):
        return v
    return Path(text(v)).expanduser()


def tools(v: Any) -> tuple[str, ...]:
    """Comma-separated names (a list of such strings from repeated --allow); `all` means every tool."""
    items = [v] if isinstance(v, str) else list(v)
    names: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise ValueError
        names += [n.strip() for n in item.split(",") if n.strip()]
    if "all" in names:
        return TOOL_NAMES
    if not names or any(n not in TOOL_NAMES and not is_mcp_name(n) for n in names):
        raise ValueError
    return tuple(dict.fromkeys(names))


def paths(v: Any) -> tuple[Path, ...]:
    """One path, comma-separated paths, or a list of them (repeated --mcp-config)."""
    items = [v] if isinstance(v, (str, Path)) else list(v)
    out = []
    for item in items:
        parts = [item] if isinstance(item, Path) else [p.strip() for p in text(item).split(",") if p.strip()]
        out += [path(p) for p in parts]
    if not out:
        raise ValueError
    return tuple(out)


def one_of(choices: tuple[str, ...] | Mapping[str, Any]) -> Callable[[Any], str]:
    """One of `choices`, in any case."""
    def parse(v: Any) -> str:
        s = text(v).lower()
        if s not in choices:
            raise ValueError
        return s
    return parse


def keymap(v: Any) -> dict[str, str]:
    """A TOML table of action = "key"."""
    if not isinstance(v, Mapping) or not all(isinstance(k, str) and isinstance(x, str) and x for k, x in v.items()):
        raise ValueError
    return dict(v)
