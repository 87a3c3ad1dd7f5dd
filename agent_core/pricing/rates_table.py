"""The learned rates and windows of Claude's models, shipped with ctxtui, so that a first run prices a
log without importing genai-prices (about 200 ms: its pydantic models), as ccusage's `--offline`
prices from the table it ships.

`rates_table.json` is made by this module from the installed genai-prices through ctxtui's own
pricing (`Pricer` learning each price period, `cost.context_window`): it holds nothing a person
wrote. It is used only while it is true: stamped with genai-prices' version, the size of its data
file and this table's format, and ignored whole when any differs (then genai-prices is loaded as
before, and the learned-rates cache keeps what a run learned). A test checks it against a fresh
build. A model id not in it costs what it did before.

    python -m agent_core.pricing.rates_table --write    # after upgrading genai-prices
    python -m agent_core.pricing.rates_table --check    # exit 1 when the table is stale
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import math

from agent_core.pricing.cost import BUCKETS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from agent_core.pricing.pricer import Learned, Period

FORMAT = 1
TABLE = Path(__file__).resolve().with_name("rates_table.json")
# The ids a Claude Code or ctxtui log names: genai-prices' Anthropic ids and the dated ids the API
# answers with. Any other id is priced through genai-prices itself.
MODELS = (
    "claude-opus-4-8", "claude-opus-4-7", "claude-opus-4-6", "claude-sonnet-4-6",
    "claude-opus-4-5", "claude-opus-4-5-20251101", "claude-sonnet-4-5", "claude-sonnet-4-5-20250929",
    "claude-haiku-4-5", "claude-haiku-4-5-20251001", "claude-opus-4-1", "claude-opus-4-1-20250805",
    "claude-opus-4-0", "claude-opus-4-20250514", "claude-sonnet-4-0", "claude-sonnet-4-20250514",
    "claude-3-7-sonnet-latest", "claude-3-7-sonnet-20250219", "claude-3-5-sonnet-20241022",
    "claude-3-5-haiku-latest", "claude-3-5-haiku-20241022", "claude-3-opus-20240229", "claude-3-haiku-20240307",
    "claude-opus-5", "claude-sonnet-5", "claude-opus-5-5", "claude-sonnet-5-5", "claude-haiku-5-5",
)


def _valid(v: Any) -> Learned | None:
    if not (isinstance(v, list) and len(v) == 3):
        return None
    const, rates, limit = v
    if not (isinstance(const, (int, float)) and math.isfinite(const) and isinstance(limit, int)
            and not isinstance(limit, bool) and limit > 0 and isinstance(rates, dict) and set(rates) == set(BUCKETS)):
        return None
    if not all(isinstance(r, (int, float)) and math.isfinite(r) and r >= 0 for r in rates.values()):
        return None
    return float(const), {k: float(rates[k]) for k in BUCKETS}, limit


def _bound(v: Any) -> bool:
    return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v))


def _periods(v: Any) -> list[Period] | None:
    """A model's price periods as `Pricer.learned()` gives them, or None when any is malformed."""
    if not isinstance(v, list) or not v:
        return None
    out: list[Period] = []
    for p in v:
        if not (isinstance(p, list) and len(p) == 3 and _bound(p[0]) and _bound(p[1])):
            return None
        learned = None if p[2] is None else _valid(p[2])
        if p[2] is not None and learned is None:
            return None
        out.append((p[0], p[1], learned))
    return out


def periods_of(models: Any) -> dict[str, list[Period]]:
    """The well-formed entries of a {model: periods} object read from JSON ({} when it is not one)."""
    out: dict[str, list[Period]] = {}
    if not isinstance(models, dict):
        return out
    for model, v in models.items():
        periods = _periods(v)
        if isinstance(model, str) and periods is not None:
            out[model] = periods
    return out


def package_dir() -> str | None:
    """genai-prices' folder on sys.path, found without importlib (4 ms of every status line call)."""
    for entry in sys.path:
        folder = os.path.join(entry or ".", "genai_prices")
        if os.path.isfile(os.path.join(folder, "__init__.py")):
            return folder
    return None


def installed_stamp(version: str | None = None) -> str | None:
    """genai-prices' version and data-file size, found without importing it (None: not installed).
    `version`: the one expected (only its dist-info folder is looked for, no listing)."""
    pkg = package_dir()
    if pkg is None:
        return None
    site = os.path.dirname(pkg)
    try:
        size = os.stat(os.path.join(pkg, "data.py")).st_size
        if version is not None:
            versions = [version] if os.path.isdir(os.path.join(site, f"genai_prices-{version}.dist-info")) else []
        else:
            versions = [n[len("genai_prices-"):-len(".dist-info")] for n in os.listdir(site)
                        if n.startswith("genai_prices-") and n.endswith(".dist-info")]
    except OSError:
        return None
    return f"{FORMAT}:{versions[0]}:{size}" if len(versions) == 1 else None


_loaded: tuple[dict[str, list[Period]], dict[str, int | None]] | None = None


def load() -> tuple[dict[str, list[Period]], dict[str, int | None]]:
    """(periods per model, window per model) when the table matches the installed genai-prices;
    two empty dicts otherwise. Read once per process."""
    global _loaded
    if _loaded is None:
        _loaded = _read(TABLE)
    return _loaded


def _read(path: Path, stamp: str | None = None) -> tuple[dict[str, list[Period]], dict[str, int | None]]:
    """The table at `path` when it was made from the installed genai-prices (or, given, `stamp`)."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError, RecursionError):
        return {}, {}
    if not isinstance(data, dict) or not isinstance(data.get("stamp"), str):
        return {}, {}
    if stamp is None:
        parts = data["stamp"].split(":")
        stamp = installed_stamp(parts[1]) if len(parts) == 3 else None
    if stamp is None or data.get("stamp") != stamp:
        return {}, {}
    models = periods_of(data.get("models"))
    raw = data.get("windows")
    windows = {m: w for m, w in raw.items() if isinstance(m, str) and (w is None or type(w) is int and w > 0)} \
        if isinstance(raw, dict) else {}
    return models, windows


def build(models: tuple[str, ...] = MODELS) -> dict:
    """The table for the installed genai-prices: every price period of each model that has prices."""
    from agent_core.pricing.cost import context_window, price_period  # noqa: PLC0415  (only when building)
    from agent_core.pricing.pricer import Pricer  # noqa: PLC0415  (only when building)

    pricer = Pricer()
    out: dict[str, list] = {}
    windows: dict[str, int | None] = {}
    for model in models:
        when = 0.0
        periods: list[Period] = []
        while True:
            start, end = price_period(model, when)
            if end is not None and start is not None and end - start <= 3600:
                periods = []          # time-of-day prices: not tabled, genai-prices prices them
                break
            pricer.rates(model, when)
            periods = pricer.learned().get(model, [])
            if end is None:
                break
            when = end
        if periods and any(r is not None for _, _, r in periods):
            out[model] = [[s, e, list(r) if r else None] for s, e, r in periods]
            windows[model] = context_window(model)
    return {"stamp": installed_stamp(), "models": out, "windows": windows}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args not in (["--write"], ["--check"]):
        print("usage: python -m agent_core.pricing.rates_table --write | --check", file=sys.stderr)
        return 2
    fresh = build()
    if args == ["--check"]:
        try:
            same = json.loads(TABLE.read_text(encoding="utf-8")) == json.loads(json.dumps(fresh))
        except (OSError, ValueError):
            same = False
        print("rates_table.json is up to date" if same else
              "rates_table.json is stale: run python -m agent_core.pricing.rates_table --write")
        return 0 if same else 1
    TABLE.write_text(json.dumps(fresh, sort_keys=True, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {TABLE} ({len(fresh['models'])} models, genai-prices {fresh['stamp']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
