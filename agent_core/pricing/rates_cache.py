"""Each model's learned per-token rates, per price period, kept between runs of `ctxtui usage` and
of a session (the loop's cost book and its engine's cache rates).

Loading genai-prices' data takes longer than reading a 50 MB log (its import builds every price
model) and was half of a session's start-up. With the rates a `Pricer` learned last time, a report
or a session loads it only for a model not seen before, or for a request above the rates' range.
The cache is a plain JSON file in ctxtui's cache folder, stamped with the price data's and the
pricing code's files (size and mtime), so an upgrade of either makes it stale; anything unreadable
or malformed is ignored, and it is written atomically, 0600. Deleting it is always safe.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from collections.abc import Mapping

from agent_core.pricing import rates_table
from agent_core.pricing.rates_table import periods_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from agent_core.pricing.pricer import Period

FILE_NAME = "usage-rates.json"
_PRICING = Path(__file__).resolve().parent


def cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """`$CTXTUI_HOME/cache`, else `$XDG_CACHE_HOME/ctxtui`, else `~/.cache/ctxtui`."""
    env = os.environ if env is None else env
    if (home := (env.get("CTXTUI_HOME") or "").strip()):
        return Path(home).expanduser() / "cache"
    if (xdg := (env.get("XDG_CACHE_HOME") or "").strip()):
        return Path(xdg).expanduser() / "ctxtui"
    user_home = (env.get("HOME") or "").strip()
    return (Path(user_home) if user_home else Path.home()) / ".cache" / "ctxtui"


def default_path(env: Mapping[str, str] | None = None) -> Path:
    """The cache file every run shares."""
    return cache_dir(env) / FILE_NAME


def load_default() -> dict[str, list[Period]]:
    """The shipped table's periods (agent_core/pricing/rates_table.py) and, over them, the cached
    ones from the shared file, for the installed price data and code."""
    return {**rates_table.load()[0], **load(default_path(), prices_stamp())}


def save_new(learned: Mapping[str, list[Period]], known: Mapping[str, list[Period]]) -> None:
    """Write the shared file when a run learned what it did not know (silent on failure)."""
    if any(list(v) != list(known.get(m) or ()) for m, v in learned.items()):
        save(default_path(), prices_stamp(), {**known, **learned})


def _stat(path: Path) -> str:
    try:
        st = path.stat()
    except OSError:
        return "-"
    return f"{st.st_size}:{st.st_mtime_ns}"


def prices_stamp() -> str | None:
    """What the rates were learned from: genai-prices' data and our pricing code, found without
    importing genai-prices. None when genai-prices is not installed."""
    folder = rates_table.package_dir()
    if folder is None:
        return None
    data = Path(folder)
    parts = [_stat(data / "data.py"), _stat(data / "data_snapshot.py"), _stat(_PRICING / "cost.py"),
             _stat(_PRICING / "pricer.py"),
             _stat(_PRICING / "long_context.py")]
    return "|".join(parts)


def load(path: Path, stamp: str | None) -> dict[str, list[Period]]:
    """The cached rates when the file's stamp is `stamp`; {} otherwise (or on any error)."""
    if stamp is None:
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError, RecursionError):
        return {}
    if not isinstance(data, dict) or data.get("stamp") != stamp:
        return {}
    return periods_of(data.get("models"))


def save(path: Path, stamp: str | None, learned: Mapping[str, list[Period]]) -> None:
    """Write the rates (atomically, 0600); a failure is silent: the cache only saves time."""
    if stamp is None:
        return
    data = {"stamp": stamp, "models": {m: [[s, e, list(r) if r else None] for s, e, r in periods]
                                       for m, periods in sorted(learned.items())}}
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        # os.open, not tempfile (5 ms of every `ctxtui usage` start): a new file under a random name
        tmp = path.with_name(f".rates-{os.getpid()}-{os.urandom(6).hex()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        pass
