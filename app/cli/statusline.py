"""`ctxtui statusline`: one line for Claude Code's `statusLine` setting.

Claude Code pipes a JSON object on stdin (session_id, transcript_path, model {id, display_name},
workspace, cost, context_window, ...) and shows the first line of stdout. This prints the context
used by the last main-chain request (input + cache read + cache write, as Claude Code counts it)
with the share left until ctxtui's auto-compact threshold, the session's dollars, today's dollars,
the active 5-hour block's time left, dollars and burn rate, and the prompt cache's state (warm with
its time left, or cold). State is kept between calls (agent_core/statusline/state.py),
so a refresh reads only what the logs gained since the last one.

A status line must never break Claude Code's screen: any failure still prints a line (what stdin
said, at least) and exits 0; the reason goes to stderr as one line, never a traceback.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from agent_core.logs.layout import is_subagent_of
from agent_core.providers.models_info import STANDARD_WINDOW
from agent_core.usage.block_rule import Block, active_block
from agent_core.statusline.format import StatusFigures, format_line
from agent_core.statusline.read import logs_to_read, refresh
from agent_core.statusline.state import (Prices, StatusState, budget_figures, day_of, remove_legacy_state,
                                         state_path)
from agent_core.security.visible_text import one_line
from agent_core.sessions.paths import ensure_state_dir, state_root

TYPE_CHECKING = False    # typing stays unloaded at run time: 3 ms of every status line call
if TYPE_CHECKING:
    from typing import Any, Mapping, Sequence, TextIO

MAX_STDIN = 1 << 20
USAGE = """\
usage: ctxtui statusline

For Claude Code's settings.json:  {"statusLine": {"type": "command", "command": "ctxtui statusline"}}
Reads Claude Code's status JSON on stdin and prints one line: context used and %% left until
auto-compact, the session's dollars, today's dollars, the active 5-hour block's time left,
its dollars and burn rate, and whether the prompt cache is still warm (and for how long).
State between calls: <ctxtui state folder>/statusline/ (CTXTUI_HOME moves it). Always exits 0.
"""


def _dict(v: Any) -> dict:
    return v if isinstance(v, dict) else {}


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) and v.strip() else None


def read_input(stdin: TextIO) -> tuple[dict, str | None]:
    """(the status JSON, or {}; why it was not usable, or None)."""
    try:
        text = stdin.read(MAX_STDIN + 1)
    except (OSError, ValueError, UnicodeDecodeError) as e:
        return {}, f"cannot read stdin: {e}"
    if len(text) > MAX_STDIN:
        return {}, "stdin is over 1 MiB: not Claude Code's status JSON"
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return {}, "stdin is not JSON"
    if not isinstance(data, dict):
        return {}, "stdin is not a JSON object"
    return data, None


def minimal_figures(data: Mapping[str, Any]) -> StatusFigures:
    """What stdin alone says: the model and Claude Code's own session cost."""
    model = _dict(data.get("model"))
    cost = _dict(data.get("cost")).get("total_cost_usd")
    usd = float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) and cost >= 0 else None
    return StatusFigures(model=_str(model.get("display_name")) or _str(model.get("id")), session_usd=usd)


def _transcript(data: Mapping[str, Any]) -> Path:
    raw = _str(data.get("transcript_path"))
    if raw is None:
        raise ValueError("no transcript_path in the status JSON")
    p = Path(raw).expanduser()
    if not p.is_absolute() or p.suffix != ".jsonl":
        raise ValueError(f"transcript_path is not an absolute .jsonl path: {raw!r}")
    return p


def _window(data: Mapping[str, Any]) -> int | None:
    size = _dict(data.get("context_window")).get("context_window_size")
    return size if isinstance(size, int) and not isinstance(size, bool) and size >= 1_000 else None


def compute(data: Mapping[str, Any], env: Mapping[str, str], now: float) -> StatusFigures:
    """Every figure of the line (reads and updates the state file). Raises on a bad transcript path."""
    transcript = _transcript(data)
    projects = transcript.parent.parent if transcript.parent.parent.name == "projects" else None
    root = state_root(env)
    folder = ensure_state_dir(root, root / "statusline")
    where = state_path(folder, projects or transcript)
    if not where.exists():
        remove_legacy_state(folder, projects or transcript)
    state = StatusState.load(where)
    paths = logs_to_read(transcript, projects, now)
    prices = Prices(state)
    refresh(state, paths, prices, now)

    base = minimal_figures(data)
    own = [str(p) for p in paths if p == transcript or is_subagent_of(p, transcript)]
    logs = [state.logs[k] for k in own if k in state.logs]
    main = state.logs.get(str(transcript))
    last = main.last if main is not None else None
    model_id = _str(_dict(data.get("model")).get("id")) or (last or {}).get("model")
    context = window = threshold = None
    if last is not None:
        b = last["buckets"]
        context = b.get("input", 0) + b.get("cache_read", 0) + b.get("cache_write_5m", 0) + b.get("cache_write_1h", 0)
    if model_id:
        # The 1M context shows in the model id ([1m]), in a window stdin gives, or in a request
        # that held more than 200k (the window rule: agent_core/providers/models_info.py).
        long = context is not None and context > STANDARD_WINDOW
        key = f"{model_id}|{_window(data)}|{'1m' if long else ''}"
        if key not in state.budgets:
            state.budgets[key] = budget_figures(model_id, _window(data), long)
        window, threshold = state.budgets[key]
    today = day_of(now)
    # No log read at all (the transcript not written yet, or nowhere to be found): today's dollars
    # are unknown, not $0.00, and the line says why.
    today_usd = sum(log.days.get(today, 0.0) for log in state.logs.values()) if state.logs else None
    note = None if transcript.is_file() else "no transcript yet"
    times = [m * 60.0 for log in state.logs.values() for m in log.minutes]
    block = active_block(times, now, Block(*state.block) if state.block else None)
    block_usd, per_hour = block_dollars(state, block, times, now) if block else (None, None)
    state.save(where)
    return StatusFigures(model=base.model or model_id, context=context, window=window, threshold=threshold,
                         session_usd=sum(log.usd for log in logs) if logs else base.session_usd,
                         session_unpriced=any(log.unpriced > 0 for log in logs),
                         today_usd=today_usd, block_left_s=block.left(now) if block else None,
                         block_usd=block_usd, block_usd_per_h=per_hour, cache_left_s=cache_left(last, now),
                         note=note)


CACHE_TTL_S = {"cache_write_1h": 3600.0, "cache_write_5m": 300.0}


def cache_left(last: Mapping[str, Any] | None, now: float) -> float | None:
    """The prompt cache's time left after the last main request: 1 hour when that request wrote
    with the 1-hour TTL, else 5 minutes (the API's default), from the request's time; 0 once cold.
    None when no request is known."""
    if not last or not isinstance(last.get("ts"), (int, float)):
        return None
    buckets = last.get("buckets") or {}
    ttl = CACHE_TTL_S["cache_write_1h"] if buckets.get("cache_write_1h") else CACHE_TTL_S["cache_write_5m"]
    return max(0.0, ttl - (now - float(last["ts"])))


def block_dollars(state: StatusState, block: Block, times: list[float], now: float) -> tuple[float, float]:
    """The active block's dollars (every log's, as its time left is) and the burn rate since its
    first activity, over at least a minute (as `usage blocks` projects it: a block seconds old
    does not burn at infinity). Activity is kept by the minute."""
    start, end = block.start // 60, block.end // 60
    usd = sum(v for log in state.logs.values() for m, v in log.minute_usd.items() if start <= int(m) < end)
    first = min((t for t in times if block.start <= t < block.end), default=now)
    return usd, usd / max(now - first, 60.0) * 3600


def main(argv: Sequence[str] | None = None, *, stdin: TextIO | None = None, stdout: TextIO | None = None,
         stderr: TextIO | None = None, env: Mapping[str, str] | None = None, now: float | None = None) -> int:
    out, err = stdout or sys.stdout, stderr or sys.stderr
    args = list(sys.argv[2:] if argv is None else argv)
    if args and args[0] in ("-h", "--help"):
        out.write(USAGE.replace("%%", "%"))
        return 0
    data, problem = read_input(stdin or sys.stdin)
    figures = minimal_figures(data)
    if problem is None and args:
        problem = f"unexpected arguments: {' '.join(args)} (ctxtui statusline takes none)"
    if problem is None:
        try:
            figures = compute(data, os.environ if env is None else env, time.time() if now is None else now)
        except Exception as e:  # noqa: BLE001  (a status line must print something whatever went wrong)
            problem = f"{type(e).__name__}: {e}"
    if problem is not None:
        err.write(f"ctxtui statusline: {one_line(problem)}\n")
    out.write(format_line(figures) + "\n")
    return 0
