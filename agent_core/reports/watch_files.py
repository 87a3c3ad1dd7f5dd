"""Waiting for `ctxtui watch`'s files to change.

`watch_changes()` wraps watchfiles' `awatch` with a short debounce (its default waits 1.6 s) and a
periodic empty yield, which doubles as a catch-up read should a file-system event ever be missed.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, AsyncIterator

from watchfiles import awatch

from agent_core.reports.watch_target import WatchTarget

DEBOUNCE_MS = 30       # awatch groups changes over at most this long (its default is 1,600)
STEP_MS = 5            # ... and yields once no new change came for this long
TIMEOUT_MS = 250       # idle this long: yield an empty set anyway (catch-up read, prompt shutdown)
POLL_DELAY_MS = 100    # --poll: how often the files are stat'ed


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
    async for changes in awatch(root, watch_filter=_only_logs, debounce=debounce_ms, step=step_ms,
                                stop_event=stop_event, rust_timeout=timeout_ms, yield_on_timeout=True,
                                force_polling=force_polling, poll_delay_ms=poll_delay_ms, recursive=recursive):
        yield {p for _c, p in changes}
