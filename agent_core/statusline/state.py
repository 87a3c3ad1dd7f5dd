"""`ctxtui statusline`'s memory between calls, so each refresh reads only the bytes appended since.

Claude Code runs the status line command after every message, so a call must cost O(new bytes),
not O(log). One JSON file per Claude Code projects folder (in ctxtui's state folder, 0600) keeps,
for each log read so far: where reading stopped (byte offset, the file's identity and the bytes
just before the offset, to notice a replaced or rewritten file), the dollars it holds (in total and
per local day), its recent activity times and its last main-chain usage. It also keeps the recent
responses (so a later copy of a response replaces the earlier one across calls, by the log layer's
`final_copy` rule), each model's per-token rates (so genai-prices is imported only for a model
never seen, or a request above the rates' range) and each model's window and auto-compact
threshold (so the engine is imported only for a model never seen).

Sessions share the file: today's dollars and the active 5-hour block cover every log of the
projects folder written in the last day. Two sessions writing it at once is safe: each write is a
whole, self-consistent snapshot, and the loser's reads are simply done again.
"""
from __future__ import annotations

import json
import os
import time
import zlib
from pathlib import Path

from agent_core.pricing import rates_table
from agent_core.pricing.pricer import Pricer

TYPE_CHECKING = False    # typing stays unloaded at run time: 3 ms of every status line call
if TYPE_CHECKING:
    from typing import Any

STATE_VERSION = 5         # 5: dollars per minute (the block's dollars and burn rate)
RECENT_KEYS = 128          # responses remembered for the final-copy rule across calls (copies come close)
ACTIVITY_S = 24 * 3600     # activity kept (and logs looked at) for today's dollars and the block
MARK_BYTES = 64            # bytes before the offset kept to notice a log rewritten in place
MAX_STATE_BYTES = 32 << 20  # a state file bigger than this is not ours to load: start over


class LogState:
    """What one log added up to, up to `offset`. (Plain classes here, not dataclasses: this runs on
    every refresh of Claude Code's prompt, and dataclasses costs 10 ms to import.)"""
    FIELDS = ("ident", "offset", "mark", "mtime_ns", "fmt", "usd", "unpriced", "days", "minutes", "minute_usd",
              "last")

    def __init__(self, ident: list[int] | None = None, offset: int = 0, mark: str = "", mtime_ns: int | None = None,
                 fmt: str | None = None, usd: float = 0.0, unpriced: int = 0, days: dict[str, float] | None = None,
                 minutes: list[int] | None = None, minute_usd: dict[str, float] | None = None,
                 last: dict[str, Any] | None = None) -> None:
        self.ident = ident if ident is not None else []   # [device, inode]
        self.offset = offset
        self.mark = mark                                  # hex of the bytes before `offset`
        # the log's modification time when it was read to its end (None: not known): written again
        # without growing, it was rewritten in place (the mark misses an earlier change)
        self.mtime_ns = mtime_ns
        self.fmt = fmt
        self.usd = usd
        self.unpriced = unpriced                          # responses of a model without prices
        self.days = days if days is not None else {}
        self.minutes = minutes if minutes is not None else []          # epoch minutes with activity
        self.minute_usd = minute_usd if minute_usd is not None else {}  # epoch minute -> dollars (the last day)
        self.last = last                                  # last main-chain response: model, buckets, ts

    def as_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.FIELDS}

    def __repr__(self) -> str:
        return f"LogState({', '.join(f'{k}={v!r}' for k, v in self.as_dict().items())})"


class StatusState:
    def __init__(self, logs: dict[str, LogState] | None = None, recent: dict[str, list] | None = None,
                 rates: dict[str, list | None] | None = None, budgets: dict[str, list] | None = None,
                 block: list | None = None) -> None:
        self.logs = logs if logs is not None else {}
        self.recent = recent if recent is not None else {}     # key -> [path, model, [BUCKETS], sidechain, ts]
        self.rates = rates if rates is not None else {}        # model -> Pricer.learned()'s periods, None: no price
        self.budgets = budgets if budgets is not None else {}  # "model|window" -> [window, threshold]
        self.block = block    # [start, end, last] of the newest 5-hour block of forgotten minutes
        self.reads = 0        # bytes read by the last refresh (tests, bench)

    # ------------------------------------------------------------------ the file
    @classmethod
    def load(cls, path: Path) -> "StatusState":
        """The saved state, or a fresh one when there is none or it cannot be trusted."""
        try:
            with open(path, "rb") as f:
                if os.fstat(f.fileno()).st_size > MAX_STATE_BYTES:
                    return cls()
                raw = json.loads(f.read())
            if raw.get("version") != STATE_VERSION:
                return cls()
            return cls(logs={k: LogState(**v) for k, v in raw["logs"].items()}, recent=raw["recent"],
                       rates=raw["rates"], budgets=raw["budgets"], block=_block(raw.get("block")))
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            return cls()

    def save(self, path: Path) -> None:
        """Atomically, 0600, into a folder the caller made private. The temp file is made as
        tempfile.mkstemp makes one (a random name, O_EXCL, 0600), without importing tempfile
        (and with it random, shutil and hashlib: a tenth of the status line's start)."""
        data = {"version": STATE_VERSION, "logs": {k: v.as_dict() for k, v in self.logs.items()},
                "recent": self.recent, "rates": self.rates, "budgets": self.budgets, "block": self.block}
        text = json.dumps(data, separators=(",", ":"))     # dumps, not dump: the C encoder
        tmp = os.path.join(os.path.dirname(path), f".statusline-{os.urandom(8).hex()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        try:
            with os.fdopen(fd, "w") as f:
                f.write(text)
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise


def state_path(folder: Path, projects: Path) -> Path:
    """The state file for a projects folder (or a lone transcript), keyed by its path: 64 bits of
    two checksums of it (zlib's: hashlib loads OpenSSL, 3 ms of every call; the key guards
    against nothing, only two folders must not share a file)."""
    raw = str(projects).encode("utf-8", "surrogateescape")
    return Path(folder) / f"{zlib.crc32(raw):08x}{zlib.adler32(raw):08x}.json"


def remove_legacy_state(folder: Path, projects: Path) -> None:
    """Delete the state file an earlier version kept for this folder (named by sha256, before
    `state_path`'s checksums): called only when the current one does not exist yet, a first call
    that reads every log anyway, so hashlib is loaded on that call alone."""
    import hashlib  # noqa: PLC0415  (start-up time: only on a first call)
    digest = hashlib.sha256(str(projects).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    try:
        os.unlink(Path(folder) / f"{digest}.json")
    except OSError:      # none (the usual case), or not ours to remove: nothing to do
        pass


def day_of(ts: float) -> str:
    """The local calendar day of an epoch time."""
    return time.strftime("%Y-%m-%d", time.localtime(ts))


# ------------------------------------------------------------------ prices and thresholds

def budget_figures(model: str, window: int | None, long_context: bool = False) -> list:
    """[window, auto-compact threshold] as ctxtui's loop computes them for `model` (and a window
    Claude Code reported; `long_context`: the transcript shows the 1M context). Loads the engine:
    done once per model, then kept in the state."""
    from agent_core.context_budget import BudgetSettings, budget_for  # noqa: PLC0415  (start-up time)

    b = budget_for(model, BudgetSettings(context_window=window, long_context=long_context)).budget
    return [b.context_window, b.autocompact_threshold]


def _block(v: object) -> list[float] | None:
    """A saved block as [start, end, last] epoch seconds, or None when absent or malformed."""
    if not (isinstance(v, list) and len(v) == 3):
        return None
    ok = all(isinstance(x, (int, float)) and not isinstance(x, bool) and 0 <= x < 1e11 for x in v)
    return [float(x) for x in v] if ok else None


class Prices:
    """Dollars of one response: the one `Pricer`, seeded with the rates the state kept, so
    genai-prices is loaded only for a model never seen (or a request above its first price tier).
    A model without prices is remembered as None, so it never loads genai-prices again."""

    def __init__(self, state: StatusState) -> None:
        self.state = state
        self.pricer = Pricer(known={**rates_table.load()[0],
                                    **{m: [(s, e, tuple(r) if r else None) for s, e, r in v]
                                       for m, v in state.rates.items() if v is not None}})

    def __call__(self, model: str, buckets: dict[str, int], when: float | None = None) -> float | None:
        """Dollars of one response at its time `when` (a price period not seen yet loads the data)."""
        rates = self.state.rates
        if model in rates and rates[model] is None:
            return None
        price = self.pricer(model, buckets, when)
        if self.pricer.periods(model) == len(rates.get(model) or ()):
            return price                    # nothing new learned: the common case, one lookup
        periods = self.pricer.learned().get(model) or []
        if any(r is not None for _, _, r in periods):
            rates[model] = [[s, e, list(r) if r else None] for s, e, r in periods]
        elif price is None:
            rates[model] = None
        return price
