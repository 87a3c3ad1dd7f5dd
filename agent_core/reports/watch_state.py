"""`ctxtui watch` without a screen: which log to follow, and what its records mean for the panes.

`WatchState.poll()` reads only the bytes appended to a session log (and to its sub-agent logs)
since the last poll, through `agent_core.logs.LogReader`, and turns the new records into the loop's
own events: a `ContextUpdate` (thresholds from `compaction.budget.ContextBudget` for the log's
model, as the loop computes them), a `CostUpdate` (model x bucket, with dollars) and one
`CompactionView` per compaction (new, or completed once Claude Code's next response tells the
tokens after it). The Textual screen (app/watch_app.py) only hands these to the widgets, so
everything here is tested without a screen.

`watch_changes()` wraps watchfiles' `awatch` with a short debounce (its default waits 1.6 s) and a
periodic empty yield, which doubles as a catch-up read should a file-system event ever be missed.
"""
from __future__ import annotations

import json
import os
import stat
import time
from collections import deque
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, AsyncIterator, Iterable, Mapping

from compaction.budget import ContextBudget

from agent_core.config import DEMO_CONTEXT_WINDOW, DEMO_MODEL
from agent_core.events import Compaction, ContextUpdate, CostUpdate
from agent_core.pricing.pricer import Pricer
from agent_core.pricing.tally import CostTally, burn_rate
from agent_core.logs import CompactionRecord, Deduper, LogReader, UsageRecord, claude_projects_dir, newest_log, open_regular
from agent_core.logs.files import describe
from agent_core.logs.discover import newest
from agent_core.providers.models_info import DEFAULT_CONTEXT_WINDOW, DEFAULT_MAX_OUTPUT, ModelLimits, model_limits
from agent_core.sessions.paths import project_state_dir, sessions_dir, state_root

DEBOUNCE_MS = 30       # awatch groups changes over at most this long (its default is 1,600)
STEP_MS = 5            # ... and yields once no new change came for this long
TIMEOUT_MS = 250       # idle this long: yield an empty set anyway (catch-up read, prompt shutdown)
POLL_DELAY_MS = 100    # --poll: how often the files are stat'ed
HISTORY_POINTS = 512   # context points kept for the plot (it shows the latest that fit)
META_PEEK = 1 << 18    # ctxtui's meta line is the first one; never read more than this for it

SOURCE_NAMES = {"claude_code": "Claude Code log", "ctxtui": "ctxtui session log"}


class WatchError(Exception):
    """A path that cannot be watched; the message says what to do (the CLI exits 2)."""


# ------------------------------------------------------------------ which file

@dataclass(frozen=True)
class WatchTarget:
    """The log to follow and, when a folder was given, the folder where a newer session may appear."""
    log: Path
    folder: Path | None = None


def ctxtui_sessions(cwd: Path, env: Mapping[str, str] | None = None) -> Path:
    """The sessions of the workspace `cwd`, in ctxtui's state folder (CTXTUI_HOME or the default)."""
    return sessions_dir(project_state_dir(state_root(env), Path(cwd).resolve()))


def default_folder(cwd: Path, env: Mapping[str, str] | None = None) -> Path:
    """ctxtui's sessions (`ctxtui_sessions`) when they hold a log, else Claude Code's projects
    folder (`$CLAUDE_CONFIG_DIR/projects` or ~/.claude/projects)."""
    env = os.environ if env is None else env
    ours = ctxtui_sessions(cwd, env)
    if ours.is_dir() and newest_log(ours) is not None:
        return ours
    return claude_projects_dir(env)


def resolve_target(path: str | Path | None, *, cwd: Path | None = None,
                   env: Mapping[str, str] | None = None) -> WatchTarget:
    """The file `ctxtui watch [PATH]` follows. Raises WatchError for a missing path or no log."""
    cwd = Path.cwd() if cwd is None else Path(cwd)
    given = path is not None
    p = Path(path).expanduser() if given else default_folder(cwd, env)
    if given and not p.is_absolute():
        p = cwd / p
    if not p.exists():
        if given:
            raise WatchError(f"{p}: no such file or folder. Give a session log (.jsonl) or a folder that holds some.")
        raise WatchError(f"no session logs found: neither {ctxtui_sessions(cwd, env)} nor {p} exists. "
                         "Run ctxtui (or Claude Code) first, or give the log's path.")
    if not p.is_dir():
        try:
            mode = p.stat().st_mode
        except OSError as e:
            raise WatchError(f"cannot read {p}: {e.strerror or e}. Check the file's permissions.") from None
        if not stat.S_ISREG(mode):
            raise WatchError(f"{p}: not a regular file ({describe(mode)}). Give a session log (.jsonl) or a folder "
                             "that holds some.")
    p = p.resolve()
    if p.is_file():
        return WatchTarget(p)
    log = newest_log(p)
    if log is None:
        raise WatchError(f"no session log (*.jsonl) under {p}. Give a log file or a folder that holds "
                         "ctxtui's .ctxtui/sessions or Claude Code's projects.")
    return WatchTarget(log.resolve(), p)


def is_main_log(path: Path) -> bool:
    """A session's own log: a .jsonl that is neither a sub-agent log nor a compaction transcript."""
    return (path.suffix == ".jsonl" and not path.name.startswith(".")
            and path.parent.name not in ("subagents", "transcripts"))


def switch_candidate(changed: Iterable[str], *, current: Path, followed: set[Path]) -> Path | None:
    """A main log that was just written and has not been followed yet in this run: the newer
    session to switch to (folder mode). Sessions followed before are never switched back to, so
    two sessions written at once do not make the view flip between them."""
    candidates = (Path(raw) for raw in changed)
    return newest(p for p in candidates if p != current and p not in followed and is_main_log(p))


# ------------------------------------------------------------------ thresholds

@dataclass(frozen=True)
class BudgetInfo:
    model: str | None
    budget: ContextBudget
    window_source: str        # override | session config | demo | genai-prices | table | default


def budget_for(model: str | None, *, context_window: int | None = None,
               config: Mapping[str, Any] | None = None) -> BudgetInfo:
    """The loop's thresholds for `model` (agent_core.config.Config.budget): the window is the
    override, else the session's configured one (ctxtui logs), else the demo's, else
    `model_limits(model)`; max output, auto-compact switch and percentage come from the session's
    config when the log has one."""
    cfg = config or {}

    def int_of(key: str) -> int | None:
        v = cfg.get(key)
        return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None

    name = model or "unknown"
    if context_window is not None:
        window, source = context_window, "override"
    elif int_of("context_window") is not None:
        window, source = int_of("context_window"), "session config"
    elif name == DEMO_MODEL:
        window, source = DEMO_CONTEXT_WINDOW, "demo"
    else:
        window, source = None, ""
    if model is None:     # nothing read yet: the defaults, without loading genai-prices' data on the UI thread
        limits = ModelLimits(name, window or DEFAULT_CONTEXT_WINDOW, DEFAULT_MAX_OUTPUT,
                             "override" if window else "default", "default")
    else:
        limits = model_limits(name, context_window=window)
    pct = cfg.get("autocompact_pct")
    pct = float(pct) if isinstance(pct, (int, float)) and not isinstance(pct, bool) and 0 < pct <= 100 else None
    budget = ContextBudget(context_window=limits.context_window,
                           max_output_tokens=int_of("max_output_tokens") or limits.max_output_tokens,
                           autocompact_enabled=not bool(cfg.get("disable_autocompact")), autocompact_pct=pct)
    return BudgetInfo(model, budget, source or limits.window_source)


def read_meta(path: Path) -> dict[str, Any]:
    """ctxtui's meta line (the first line of its session log), or {}; a `config` that is not a
    table is dropped (a damaged log must not break the thresholds)."""
    try:
        with open_regular(path) as f:
            head = f.read(META_PEEK)
    except OSError:
        return {}
    line = head.split(b"\n", 1)[0]
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):    # RecursionError: absurdly deep nesting
        return {}
    if not isinstance(obj, dict) or obj.get("t") != "meta":
        return {}
    if not isinstance(obj.get("config"), dict):
        obj.pop("config", None)
    return obj


# ------------------------------------------------------------------ compactions

@dataclass(frozen=True)
class CompactionView:
    """One compaction as the timeline shows it. `tokens_after` is None until known (Claude Code
    logs it only with the next response); `new` is False when this completes a row already shown."""
    key: str
    layer: str
    trigger: str
    tokens_before: int | None
    tokens_after: int | None
    timestamp: float | None
    is_sidechain: bool = False
    new: bool = True

    @classmethod
    def of(cls, rec: CompactionRecord, new: bool) -> "CompactionView":
        layer = "sub-agent" if rec.is_sidechain else rec.layer
        return cls(rec.key, layer, rec.trigger, rec.tokens_before, rec.tokens_after, rec.timestamp,
                   rec.is_sidechain, new)

    @property
    def freed(self) -> int | None:
        if self.tokens_before is None or self.tokens_after is None:
            return None
        return max(0, self.tokens_before - self.tokens_after)

    def event(self) -> Compaction:
        """The loop's event (unknown numbers as 0)."""
        return Compaction(layer=self.layer, trigger=self.trigger, tokens_before=self.tokens_before or 0,
                          tokens_after=self.tokens_after or 0, timestamp=self.timestamp or 0.0)


# ------------------------------------------------------------------ the state

@dataclass
class WatchUpdate:
    """What one poll changed: each field is None / empty when that part did not change."""
    records: int = 0
    context: ContextUpdate | None = None
    cost: CostUpdate | None = None
    compactions: list[CompactionView] = field(default_factory=list)
    header_changed: bool = False
    reset: bool = False       # the log was replaced or rewritten: everything was re-read from its start

    @property
    def changed(self) -> bool:
        return bool(self.context or self.cost or self.compactions or self.header_changed or self.reset)


class WatchState:
    """The watched session: context, cost and compactions so far. Call `poll()` from one thread
    at a time (the screen loads a big log in a thread, then polls on each file change)."""

    def __init__(self, path: str | Path, *, context_window: int | None = None, pricer: Pricer | None = None) -> None:
        self.path = Path(path)
        self.context_window = context_window
        self._start(CostTally(pricer=pricer or Pricer()))

    def _start(self, cost: CostTally) -> None:
        """Nothing read yet: at the start, and again when a log was replaced or rewritten."""
        self.dedup = Deduper()
        self.readers: dict[Path, LogReader] = {}
        self._reader(self.path)
        self.meta: dict[str, Any] = {}
        self._meta_read = False
        self.model: str | None = None
        self._budgets: dict[str | None, BudgetInfo] = {}
        self.info = self._budget_info(None)
        self.session_id: str | None = None
        self.tokens: int | None = None
        self.last_buckets: dict[str, int] | None = None     # None after a compaction: an estimate
        self.turns = 0
        self.history: deque[tuple[int, int, bool]] = deque(maxlen=HISTORY_POINTS)
        self.compactions: dict[str, CompactionView] = {}
        self.cost = cost
        self.records = 0
        self.responses = 0
        self.first_ts: float | None = None
        self.last_ts: float | None = None
        self._mark_next = False

    # -- files
    def _reader(self, path: Path) -> LogReader:
        r = self.readers.get(path)
        if r is None:
            r = self.readers[path] = LogReader(path, dedup=self.dedup)
        return r

    @property
    def main_reader(self) -> LogReader:
        return self.readers[self.path]

    @property
    def format(self) -> str | None:
        return self.main_reader.format

    @property
    def source_name(self) -> str:
        return SOURCE_NAMES.get(self.format or "", "session log")

    @property
    def skipped(self) -> int:
        """Corrupt or cut-off lines skipped so far, over the log and its sub-agent logs."""
        return sum(r.skipped for r in self.readers.values())

    @property
    def first_corrupt_line(self) -> int | None:
        return self.main_reader.stats.first_corrupt_line

    @property
    def subagent_logs(self) -> int:
        return len(self.readers) - 1

    def _discover(self) -> None:
        """Sub-agent logs of this session (`<stem>/subagents/*.jsonl`): followed as they appear.
        Only that folder is listed (one scandir per poll), never the whole session folder."""
        try:
            found = sorted(e.path for e in os.scandir(self.path.with_suffix("") / "subagents")
                           if e.name.endswith(".jsonl") and not e.name.startswith(".") and e.is_file())
        except OSError:        # no such folder (the usual case)
            return
        for p in found:
            self._reader(Path(p))

    # -- thresholds
    def _budget_info(self, model: str | None) -> BudgetInfo:
        info = self._budgets.get(model)
        if info is None:
            info = self._budgets[model] = budget_for(model, context_window=self.context_window,
                                                     config=self.meta.get("config") if self.meta else None)
        return info

    @property
    def budget(self) -> ContextBudget:
        return self.info.budget

    # -- reading
    def poll(self) -> WatchUpdate:
        """Read what was appended since the last poll and apply it. A log replaced (a new file
        renamed over it), truncated or rewritten in place invalidates what was counted from it:
        then everything is counted again from the start, and the update says `reset`."""
        resets = self._resets()
        up = self._poll()
        if self._resets() != resets:
            self._start(CostTally(pricer=self.cost.price))
            up = self._poll()
            up.reset = True
        return up

    def _resets(self) -> int:
        return sum(r.follower.resets for r in self.readers.values())

    def _poll(self) -> WatchUpdate:
        self._discover()
        up = WatchUpdate()
        context_changed = False
        cost_changed = False
        skipped = self.skipped
        for reader in list(self.readers.values()):
            for rec in reader.records():
                up.records += 1
                if isinstance(rec, UsageRecord):
                    cost_changed = True
                    context_changed |= self._usage(rec)
                else:
                    context_changed |= self._compaction(rec, up)
            if reader is self.main_reader and not self._meta_read and reader.format == "ctxtui":
                self._meta_read = True
                self.meta = read_meta(self.path)
                if self.meta:
                    self._budgets.clear()
                    if self.model is None and isinstance(self.meta.get("model"), str):
                        self.model = self.meta["model"]
                    self.info = self._budget_info(self.model)
                    up.header_changed = context_changed = True
        self.records += up.records
        if context_changed:
            up.context = self.context_event()
        if cost_changed:
            up.cost = self.cost.event()
        up.header_changed |= bool(up.records) or self.skipped != skipped
        return up

    def _seen(self, ts: float | None) -> None:
        if ts is not None:
            self.first_ts = ts if self.first_ts is None else min(self.first_ts, ts)
            self.last_ts = ts if self.last_ts is None else max(self.last_ts, ts)

    def _usage(self, rec: UsageRecord) -> bool:
        if rec.replaces is not None:      # a sub-agent copy counted earlier: this main copy replaces it
            old = rec.replaces
            self.cost.add_buckets(old.model, old.buckets, old.purpose, sign=-1)
        self.cost.add_buckets(rec.model, rec.buckets, rec.purpose)
        self._seen(rec.timestamp)
        self.responses += 1 if rec.replaces is None else 0
        if rec.purpose != "main" or rec.is_sidechain:
            return False
        self.session_id = rec.session_id
        if rec.model != self.model:
            self.model = rec.model
            self.info = self._budget_info(rec.model)
        self.tokens = rec.context_tokens
        self.last_buckets = dict(rec.buckets)
        self.turns += 1
        self.history.append((self.turns, rec.context_tokens, self._mark_next))
        self._mark_next = False
        return True

    def _compaction(self, rec: CompactionRecord, up: WatchUpdate) -> bool:
        old = self.compactions.get(rec.key)
        new = old is None
        view = CompactionView.of(rec, new)
        if old is not None and replace(old, new=False) == view:
            return False                      # the same record again: nothing to show
        self.compactions[rec.key] = view
        up.compactions.append(view)
        self._seen(rec.timestamp)
        if rec.is_sidechain or not new:
            return False
        if rec.tokens_after is not None:      # ctxtui logs the count after each compaction
            self.tokens = rec.tokens_after
            self.last_buckets = None
            self.history.append((self.turns, rec.tokens_after, True))
            return True
        self._mark_next = True                # Claude Code: the next response's context is the count after
        return False

    # -- views
    def context_event(self) -> ContextUpdate | None:
        """The context numbers now, as the loop's `Agent.context_event` would give them."""
        if self.tokens is None:
            return None
        b = self.budget
        t = self.tokens
        cats: dict[str, int] = {}
        if self.last_buckets is not None:
            lb = self.last_buckets
            cats = {"cache_read": lb.get("cache_read", 0),
                    "cache_write": lb.get("cache_write_5m", 0) + lb.get("cache_write_1h", 0),
                    "input": lb.get("input", 0), "output": lb.get("output", 0)}
        else:
            cats = {"estimated": t}
        cats["free"] = max(0, b.autocompact_threshold - t)
        cats["autocompact_buffer"] = b.context_window - b.autocompact_threshold
        return ContextUpdate(tokens=t, window=b.context_window, threshold=b.autocompact_threshold,
                             state=b.state(t), percent_left=round(b.percent_left(t), 1), categories=cats,
                             warning=b.warning_threshold, error=b.error_threshold, blocking=b.blocking_limit)

    def history_points(self) -> tuple[tuple[int, int, bool], ...]:
        return tuple(self.history)

    def cost_extras(self) -> dict[str, Any]:
        """Figures the cost pane shows besides the event: cache hit rate, what caching saved, and
        the burn rate over the log's own time span (from its timestamps, not the wall clock)."""
        out: dict[str, Any] = {}
        if any(self.cost.tokens().values()):
            out["cache_hit_rate"] = self.cost.cache_hit_rate()
            saved = self.cost.saved_by_cache_usd()
            if saved is not None:
                out["saved_usd"] = saved
        burn = burn_rate(self.cost.total_usd, self.first_ts, self.last_ts)
        if burn is not None:
            out["burn_usd_per_hour"] = burn
        return out

    def compaction_events(self) -> list[Compaction]:
        return [v.event() for v in self.compactions.values()]


# ------------------------------------------------------------------ following files

def _only_logs(_change: Any, path: str) -> bool:
    return path.endswith(".jsonl")


def watch_root(target: WatchTarget, current: Path) -> tuple[Path, bool]:
    """(folder to watch, recursive). A folder target: the whole tree (a new session may appear
    anywhere under it). A file: its own folder only, so pointing at a log in a big tree does not
    put a watch on every sub-folder; its sub-agent logs are picked up by the periodic read."""
    if target.folder is not None:
        return target.folder, True
    return current.parent, False


async def watch_changes(root: Path, *, recursive: bool = True, force_polling: bool = False,
                        stop_event: Any = None, debounce_ms: int = DEBOUNCE_MS, step_ms: int = STEP_MS,
                        timeout_ms: int = TIMEOUT_MS, poll_delay_ms: int = POLL_DELAY_MS) -> AsyncIterator[set[str]]:
    """The .jsonl paths changed under `root`, as sets; an empty set every `timeout_ms` of quiet.
    Set `stop_event` (an asyncio.Event) to end it promptly: awatch's thread checks it every step."""
    from watchfiles import awatch

    async for changes in awatch(root, watch_filter=_only_logs, debounce=debounce_ms, step=step_ms,
                                stop_event=stop_event, rust_timeout=timeout_ms, yield_on_timeout=True,
                                force_polling=force_polling, poll_delay_ms=poll_delay_ms, recursive=recursive):
        yield {p for _c, p in changes}


def now() -> float:
    """Monotonic seconds, for latency figures."""
    return time.perf_counter()
