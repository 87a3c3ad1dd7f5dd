"""The app takes the loop's events through one pump per turn (app/tui/event_feed.py): in order, those
already there without waiting, the end and the stream's errors as they happened, and a closed feed
stops the stream (whose own clean-up runs)."""
from __future__ import annotations

import asyncio

import pytest

from agent_core import events as ev
from app.tui.event_feed import NOT_YET, EventFeed


async def test_events_come_in_order_then_the_end():
    async def stream():
        for i in range(5):
            yield ev.Notice(message=str(i))

    feed = EventFeed(stream())
    got = []
    while (e := await feed.next()) is not None:
        got.append(e.message)
    assert got == ["0", "1", "2", "3", "4"]
    assert await feed.next() is None and await feed.next(timeout=0) is None


async def test_an_event_already_there_is_taken_at_once_and_none_is_not_waited_for():
    gate = asyncio.Event()

    async def stream():
        yield ev.Notice(message="first")
        yield ev.Notice(message="second")
        await gate.wait()
        yield ev.Notice(message="late")

    feed = EventFeed(stream())
    assert (await feed.next()).message == "first"       # the pump ran: the second is queued
    assert (await feed.next(timeout=0)).message == "second"
    assert await feed.next(timeout=0) is NOT_YET          # nothing there, and no time to wait
    assert await feed.next(timeout=0.01) is NOT_YET
    gate.set()
    assert (await feed.next(timeout=5)).message == "late"
    assert await feed.next() is None


async def test_the_streams_error_is_raised_where_it_happened():
    async def stream():
        yield ev.Notice(message="before")
        raise RuntimeError("the loop broke")

    feed = EventFeed(stream())
    assert (await feed.next()).message == "before"
    with pytest.raises(RuntimeError, match="the loop broke"):
        await feed.next()
    assert await feed.next() is None


async def test_closing_stops_the_stream_and_its_clean_up_runs():
    cleaned = asyncio.Event()

    async def stream():
        try:
            yield ev.Notice(message="one")
            await asyncio.sleep(30)
            yield ev.Notice(message="never")
        finally:
            cleaned.set()

    feed = EventFeed(stream())
    assert (await feed.next()).message == "one"
    feed.close()
    await asyncio.wait_for(cleaned.wait(), 5)
