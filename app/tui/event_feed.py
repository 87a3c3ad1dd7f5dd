"""The loop's events as they become ready, so the app can take those already there without waiting.

The app shows events in batches (event_view.py `EventView.show`): after each event it asks for the
next one with a time limit. Asked of the loop's async iterator directly, that is a task and a timer
per event (about 20 µs of CPU each, 200 events a demo turn). Here one task pumps the iterator into a queue
for the whole turn; an event already queued is taken at once, and only an empty queue is waited on."""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Final

from agent_core import events as ev


class _NotYet:
    def __repr__(self) -> str:
        return "NOT_YET"


NOT_YET: Final = _NotYet()     # `next` found no event in the time it was given


class _Failed:
    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


_END: Final = object()


class EventFeed:
    """One turn's events: `next` gives them in order, then None once the stream has ended; an
    error the stream raised is raised by `next` in its place. `close` stops the stream."""

    def __init__(self, stream: AsyncIterator[ev.Event]) -> None:
        self._queue: asyncio.Queue[object] = asyncio.Queue()
        self._ended = False
        self._pump_task = asyncio.ensure_future(self._pump(stream))

    async def _pump(self, stream: AsyncIterator[ev.Event]) -> None:
        try:
            async for e in stream:
                self._queue.put_nowait(e)
        except asyncio.CancelledError:
            raise
        except Exception as error:     # handed over to the reader, which raises it
            self._queue.put_nowait(_Failed(error))
        finally:
            self._queue.put_nowait(_END)

    async def next(self, timeout: float | None = None) -> ev.Event | None | _NotYet:
        """The next event; None when the stream has ended; NOT_YET when none came within
        `timeout` seconds (0: only one already there)."""
        if self._ended:
            return None
        if self._queue.empty():
            if timeout is not None and timeout <= 0:
                return NOT_YET
            try:
                async with asyncio.timeout(timeout):
                    item = await self._queue.get()
            except TimeoutError:
                return NOT_YET
        else:
            item = self._queue.get_nowait()
        if item is _END:
            self._ended = True
            return None
        if isinstance(item, _Failed):
            self._ended = True
            raise item.error
        return item  # type: ignore[return-value]

    def close(self) -> None:
        """Stop the stream if it still runs (its own clean-up then runs: the loop cancels its turn)."""
        if not self._pump_task.done():
            self._pump_task.cancel()
