"""Waiting for `ctxtui watch`'s files to change.

`watch_changes()` wraps watchfiles' `awatch` with a short debounce (its default waits 1.6 s) and a
periodic empty yield, which doubles as a catch-up read should a file-system event ever be missed.
`wait_for_log()` waits for a first log where there is none yet.
"""
from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any, AsyncIterator

from watchfiles import awatch

from agent_core.watch.target import WatchTarget, first_log

DEBOUNCE_MS = 30       # awatch groups changes over at most this long (its default is 1,600)
STEP_MS = 1            # ... and yields once no new change came for this long
TIMEOUT_MS = 250       # idle this long: yield an empty set anyway (catch-up read, prompt shutdown)
POLL_DELAY_MS = 100    # --poll: how often the files are stat'ed
RESCAN_S = 2.0         # waiting for a first log: how often the folder given is walked for one


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
                        stop_event: asyncio.Event | None = None, debounce_ms: int = DEBOUNCE_MS, step_ms: int = STEP_MS,
                        timeout_ms: int = TIMEOUT_MS, poll_delay_ms: int = POLL_DELAY_MS) -> AsyncIterator[set[str]]:
    """The .jsonl paths changed under `root`, as sets; an empty set every `timeout_ms` of quiet.
    Set `stop_event` (an asyncio.Event) to end it promptly: awatch's thread checks it every step."""
    async for changes in awatch(root, watch_filter=_only_logs, debounce=debounce_ms, step=step_ms,
                                stop_event=stop_event, rust_timeout=timeout_ms, yield_on_timeout=True,
                                force_polling=force_polling, poll_delay_ms=poll_delay_ms, recursive=recursive):
        yield {p for _c, p in changes}


async def wait_for_log(target: WatchTarget, *, force_polling: bool = False, stop_event: asyncio.Event | None = None,
                       rescan_s: float = RESCAN_S, tick_ms: int = TIMEOUT_MS) -> WatchTarget | None:
    """Wait until a session log appears where `target` waits (`target.waiting`) and return the
    target to follow; None once `stop_event` is set. The folder given is watched for file events
    (a log written there is seen at once) and walked every `rescan_s`; the session folders of a
    workspace, which may not exist yet, are looked at on every tick."""
    found = await asyncio.to_thread(first_log, target)
    if found is not None:
        return found
    root = target.folder if target.folder is not None and target.folder.is_dir() else None
    last_walk = time.monotonic()
    ticks = (watch_changes(root, force_polling=force_polling, stop_event=stop_event, timeout_ms=tick_ms)
             if root is not None else _ticks(stop_event, tick_ms))
    async for changed in ticks:
        deep = bool(changed) or time.monotonic() - last_walk > rescan_s
        if deep:
            last_walk = time.monotonic()
        found = await asyncio.to_thread(first_log, target, deep=deep)
        if found is not None:
            return found
    return None


async def _ticks(stop_event: asyncio.Event | None, tick_ms: int) -> AsyncIterator[set[str]]:
    """An empty set every `tick_ms` until `stop_event` is set: waiting where no folder exists yet."""
    while stop_event is None or not stop_event.is_set():
        await asyncio.sleep(tick_ms / 1000)
        yield set()
